"""``manage.py toolcalling_mcp``: serve an assistant's tools over MCP stdio, as a given user, for local clients."""

from __future__ import annotations

import sys
from contextlib import redirect_stdout
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.translation import gettext as _

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
        if not getattr(user, "is_active", True):  # as the site's authentication refuses them over HTTP (401)
            raise CommandError(_("The user %(user)s is inactive.") % {"user": repr(options["user"])})
        if not assistant.has_permission(user):
            raise CommandError(
                _("%(user)s may not use the assistant %(assistant)s.")
                % {"user": options["user"], "assistant": repr(options["assistant"])}
            )
        protocol = sys.stdout
        try:
            # stdout carries JSON-RPC only: whatever else prints (the console e-mail backend, a tool's print())
            # goes to stderr.
            with redirect_stdout(sys.stderr):
                serve_stdio(assistant, user, sys.stdin.buffer, protocol)
        except MCPNotInstalled as exc:
            raise CommandError(str(exc))
        except KeyboardInterrupt:
            pass
