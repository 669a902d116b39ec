"""The sweep that keeps approvals moving when nobody is looking: for Celery beat or cron.

It expires calls that waited too long for a decision, fails approved calls whose worker stopped, and
queues again the continuations a broker outage lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from ..conf import toolcalling_settings
from ..models import Conversation, ToolCall
from ._decisions import expire
from ._runs import PENDING_STATUSES, enqueue_continue, fail_interrupted


@dataclass(kw_only=True)
class SweepResult:
    expired: list[ToolCall] = field(default_factory=list)
    failed: list[ToolCall] = field(default_factory=list)
    continued: list[Conversation] = field(default_factory=list)


def sweep(now: datetime | None = None) -> SweepResult:
    """Expire, fail and continue what is due (see the module docstring)."""
    return SweepResult(expired=expire(now), failed=fail_stalled(now), continued=continue_stalled(now))


def fail_stalled(now: datetime | None = None) -> list[ToolCall]:
    """Mark approved calls whose run's lease ended as failed: their worker died (or overran the lease)."""
    now = now or timezone.now()
    legacy_cutoff = now - timedelta(seconds=toolcalling_settings.APPROVAL_RUN_TIMEOUT)
    stalled = ToolCall.objects.filter(
        Q(lease_expires_at__lte=now) | Q(lease_expires_at__isnull=True, started_at__lt=legacy_cutoff),
        status=ToolCall.Status.RUNNING,
        requires_approval=True,
    ).select_related("conversation")
    return [call for call in stalled if fail_interrupted(call)]


def continue_stalled(now: datetime | None = None) -> list[Conversation]:
    """Queue again the continuation of conversations still ``awaiting_approval`` with nothing pending.

    That happens when the broker was unreachable as the last call was decided; queueing it again is
    safe, since a continuation claims the conversation conditionally.
    """
    cutoff = (now or timezone.now()) - timedelta(seconds=60)
    stalled = Conversation.objects.filter(status=Conversation.Status.AWAITING_APPROVAL, updated_at__lt=cutoff).exclude(
        tool_calls__status__in=PENDING_STATUSES
    )
    resumed = []
    for conversation in stalled:
        enqueue_continue(conversation.pk)
        resumed.append(conversation)
    return resumed
