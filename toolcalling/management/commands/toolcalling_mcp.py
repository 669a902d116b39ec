"""``manage.py toolcalling_mcp``: serve an assistant's tools over MCP stdio, as a given user, for local clients."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from toolcalling.exceptions import MCPNotInstalled
from toolcalling.management._arguments import user_and_assistant
from toolcalling.mcp import serve_stdio


class Command(BaseCommand):
    help = (
        "Serve an assistant's tools over MCP on stdin/stdout (newline-delimited JSON-RPC) as one user, for an "
        "MCP client that starts this command. Calls are stored and gated as in a chat."
    )
    requires_system_checks: list[str] = []  # a client starts it for every session; `manage.py check` is for checks

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--assistant", required=True, help="The assistant's id.")
        parser.add_argument("--user", required=True, help="The username the tools act for.")

    def handle(self, *args: Any, **options: Any) -> None:
        user, assistant = user_and_assistant(options["user"], options["assistant"])
        if not assistant.has_permission(user):
            raise CommandError(f"{options['user']} may not use the assistant {options['assistant']!r}.")
        try:
            serve_stdio(assistant, user, sys.stdin, sys.stdout)
        except MCPNotInstalled as exc:
            raise CommandError(str(exc))
        except KeyboardInterrupt:
            pass
