"""The sweep that keeps approvals and interrupted turns moving when nobody is looking: for Celery beat or cron.

It expires calls that waited too long for a decision, deals with calls whose worker stopped (run again, or left
for a person to decide), goes on with turns whose process stopped, and queues again the continuations a broker
outage lost.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from ..conf import toolcalling_settings
from ..engine import resume_stale_turn
from ..exceptions import NotRegistered, TurnError, TurnInterrupted
from ..models import Conversation, ToolCall
from ._decisions import expire
from ._runs import PENDING_STATUSES, continue_when_decided, enqueue_continue, recover_interrupted

logger = logging.getLogger("toolcalling")


@dataclass(kw_only=True)
class SweepResult:
    expired: list[ToolCall] = field(default_factory=list)
    unknown: list[ToolCall] = field(default_factory=list)
    """Calls whose worker stopped, of tools that may not run again: they wait for a person (``outcome_unknown``)."""
    retried: list[ToolCall] = field(default_factory=list)
    """Calls whose worker stopped, of ``idempotent`` tools: queued to run again."""
    resumed: list[Conversation] = field(default_factory=list)
    """Conversations whose turn went quiet for ``STALE_TURN_TIMEOUT``, taken over and going on."""
    continued: list[Conversation] = field(default_factory=list)

    @property
    def failed(self) -> list[ToolCall]:
        """Every call whose worker stopped (run again or waiting for a person), as reports before these knew."""
        return [*self.unknown, *self.retried]


def sweep(now: datetime | None = None) -> SweepResult:
    """Expire, recover, resume and continue what is due (see the module docstring)."""
    result = SweepResult(expired=expire(now))
    for call, outcome in recover_stalled(now):
        (result.unknown if outcome == "unknown" else result.retried).append(call)
    result.resumed = resume_stalled(now)
    result.continued = continue_stalled(now)
    return result


def recover_stalled(now: datetime | None = None) -> list[tuple[ToolCall, str]]:
    """The runs whose lease ended (their worker died, or overran the lease), each run again if its tool is
    idempotent (``"retried"``) or left for a person (``"unknown"``); see ``recover_interrupted``."""
    now = now or timezone.now()
    legacy_cutoff = now - timedelta(seconds=toolcalling_settings.APPROVAL_RUN_TIMEOUT)
    stalled = ToolCall.objects.filter(
        Q(lease_expires_at__lte=now)
        | Q(lease_expires_at__isnull=True, requires_approval=True, started_at__lt=legacy_cutoff),
        status=ToolCall.Status.RUNNING,
    ).select_related("conversation")
    recovered = []
    for call in stalled:
        outcome = recover_interrupted(call, now)
        if outcome is not None:
            recovered.append((call, outcome))
    return recovered


def resume_stalled(now: datetime | None = None) -> list[Conversation]:
    """Take over the turns that went quiet for ``STALE_TURN_TIMEOUT`` (their process died, or hangs) and go on
    from what is stored: see ``engine.resume_stale_turn``. A call that may have started there and may not run
    again now waits for a person (the engine sends ``tool_call_outcome_unknown`` for it). Then each continues once
    nothing waits."""
    cutoff = (now or timezone.now()) - timedelta(seconds=toolcalling_settings.STALE_TURN_TIMEOUT)
    resumed = []
    for conversation in Conversation.objects.filter(status=Conversation.Status.RUNNING, updated_at__lt=cutoff):
        try:
            if not resume_stale_turn(conversation):
                continue
        except (TurnError, TurnInterrupted, NotRegistered) as exc:  # ended failed, or taken by another process
            logger.warning("the stalled turn of conversation %s could not go on: %s", conversation.pk, exc)
            continue
        continue_when_decided(conversation)
        resumed.append(conversation)
    return resumed


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
