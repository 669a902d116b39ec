"""``manage.py toolcalling_expire``: expire tool calls waiting past APPROVAL_TIMEOUT (for cron instead of beat)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from toolcalling import approval


class Command(BaseCommand):
    help = (
        "Expire tool calls that waited longer than TOOLCALLING['APPROVAL_TIMEOUT'] for a decision (the model is "
        "told and the conversation goes on), fail approved calls left running by a stopped worker, and queue "
        "again the continuations of conversations whose calls are all decided."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = approval.sweep()
        expired, stalled, resumed = result.expired, result.failed, result.continued
        for call in expired:
            self.stdout.write(f"expired #{call.pk} {call.name} (conversation {call.conversation_id})")
        for call in stalled:
            self.stdout.write(f"failed #{call.pk} {call.name}: {approval.WORKER_STOPPED}")
        for conversation in resumed:
            self.stdout.write(f"continued conversation {conversation.pk}")
        self.stdout.write(
            self.style.SUCCESS(f"{len(expired)} expired, {len(stalled)} failed, {len(resumed)} continued.")
        )
