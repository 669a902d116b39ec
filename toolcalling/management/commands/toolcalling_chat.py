"""``manage.py toolcalling_chat``: talk to an assistant from the terminal, as a given user."""

from __future__ import annotations

import sys
from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from toolcalling.assistant import Assistant
from toolcalling.engine import conversation_for
from toolcalling.exceptions import ConversationBusy, TurnError
from toolcalling.management._arguments import user_and_assistant
from toolcalling.models import Conversation


class Command(BaseCommand):
    help = (
        "Chat with an assistant from the terminal: each line read from stdin is a message; answers and tool "
        "activity are printed. --message sends one message and exits."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="The username the assistant acts for.")
        parser.add_argument("--assistant", required=True, help="The assistant's id.")
        parser.add_argument("--message", help="Send this one message and exit.")
        parser.add_argument("--conversation", help="Continue this conversation (its id) instead of starting one.")

    def handle(self, *args: Any, **options: Any) -> None:
        user, assistant = user_and_assistant(options["user"], options["assistant"])
        conversation = None
        if options["conversation"]:
            conversation = Conversation.objects.filter(pk=options["conversation"], user=user).first()
            if conversation is None:
                raise CommandError(
                    _("%(user)s has no conversation %(conversation)s.")
                    % {"user": options["user"], "conversation": repr(options["conversation"])}
                )
        if options["message"] is not None:
            self.say(assistant, user, options["message"], conversation)
            return
        interactive = sys.stdin.isatty()
        if interactive:
            self.stdout.write(
                _("Talking to %(assistant)s as %(user)s. Ctrl-D ends.")
                % {"assistant": assistant.name, "user": user.get_username()}
            )
        for line in sys.stdin:
            text = line.strip()
            if not text:
                continue
            conversation = self.say(assistant, user, text, conversation)

    def say(self, assistant: Assistant, user: Any, text: str, conversation: Conversation | None) -> Conversation:
        """Run one turn and print what happened; errors are printed, not raised, so a session goes on."""

        def show(event: str, data: dict[str, Any]) -> None:
            if event == "tool_call_started":
                self.stdout.write(self.style.NOTICE(f"  -> {data['name']}"))
            elif event == "tool_call_finished":
                self.stdout.write(self.style.NOTICE(f"  <- {data['name']}: {data['status']}"))
            elif event == "awaiting_approval":
                names = ", ".join(c["name"] for c in data["tool_calls"])
                self.stdout.write(
                    self.style.WARNING("  " + _("waiting for a staff decision on: %(calls)s") % {"calls": names})
                )

        try:
            conversation = conversation_for(assistant, user, conversation)
        except (PermissionDenied, ValueError) as exc:
            raise CommandError(str(exc))
        try:
            result = assistant.run(user, text, conversation, listeners=[show])
        except (ConversationBusy, TurnError) as exc:
            self.stderr.write(self.style.ERROR(pgettext("toolcalling", "error: %(error)s") % {"error": exc}))
            return conversation
        if result.reply:
            self.stdout.write(result.reply)
        if result.output is not None:
            self.stdout.write(result.output.model_dump_json(indent=2))
        return result.conversation
