"""``manage.py toolcalling_expire``: expire tool calls waiting past APPROVAL_TIMEOUT (for cron instead of beat)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from toolcalling import approval
from toolcalling.attachments import sweep_unattached


class Command(BaseCommand):
    help = (
        "Expire tool calls that waited longer than TOOLCALLING['APPROVAL_TIMEOUT'] for a decision (the model is "
        "told and the conversation goes on), run again (idempotent tools) or leave to a person (outcome unknown) the "
        "calls left running by a stopped worker, go on with turns quiet for TOOLCALLING['STALE_TURN_TIMEOUT'], and "
        "queue again the continuations of conversations whose calls are all decided; delete uploads no message took "
        "within TOOLCALLING['ATTACHMENTS']['UNATTACHED_MAX_AGE']."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = approval.sweep()
        expired, resumed = result.expired, result.continued
        for call in expired:
            values = {"id": call.pk, "name": call.name, "conversation": call.conversation_id}
            self.stdout.write(_("expired #%(id)s %(name)s (conversation %(conversation)s)") % values)
        for call in result.unknown:
            stopped = {"id": call.pk, "name": call.name}
            self.stdout.write(
                _("outcome unknown #%(id)s %(name)s: the worker stopped while running this call") % stopped
            )
        for call in result.retried:
            stopped = {"id": call.pk, "name": call.name}
            self.stdout.write(_("running again #%(id)s %(name)s: the worker stopped while running this call") % stopped)
        for conversation in result.resumed:
            self.stdout.write(_("took over the quiet turn of conversation %(id)s") % {"id": conversation.pk})
        for conversation in resumed:
            self.stdout.write(pgettext("toolcalling", "continued conversation %(id)s") % {"id": conversation.pk})
        swept = sweep_unattached()
        if swept:
            self.stdout.write(_("deleted %(count)d unsent attachments") % {"count": swept})
        self.stdout.write(
            self.style.SUCCESS(
                _(
                    "%(expired)d expired, %(unknown)d of unknown outcome, %(retried)d run again, %(taken)d turns "
                    "taken over, %(continued)d continued."
                )
                % {
                    "expired": len(expired),
                    "unknown": len(result.unknown),
                    "retried": len(result.retried),
                    "taken": len(result.resumed),
                    "continued": len(resumed),
                }
            )
        )
