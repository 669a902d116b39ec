"""``manage.py toolcalling_record CONVERSATION_ID --output FILE``: write a stored conversation as a replay
fixture for ``toolcalling.testing.ReplayModel`` (the ``toolcalling_replay`` pytest fixture)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from toolcalling.evals._recording import record
from toolcalling.exceptions import NotRegistered
from toolcalling.models import Conversation


class Command(BaseCommand):
    help = "Write a stored conversation (its requests' shape, the model's replies, tool results) as a replay fixture."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("conversation", help="The conversation's id.")
        parser.add_argument("--output", required=True, help="The JSON file to write.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            conversation = Conversation.objects.select_related("user").get(pk=options["conversation"])
        except (Conversation.DoesNotExist, ValidationError):
            raise CommandError(f"No conversation {options['conversation']!r}.")
        try:
            fixture = record(conversation)
        except NotRegistered as exc:
            raise CommandError(str(exc))
        Path(options["output"]).write_text(json.dumps(fixture, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        self.stdout.write(f"{len(fixture['exchanges'])} model replies written to {options['output']}")
