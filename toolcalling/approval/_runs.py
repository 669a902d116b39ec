"""Running approved calls on a worker, and going on with the conversation once every call is decided.

Exactly-once does not rely on the broker: the run starts only if this delivery moves the call from
``approved`` to ``running`` (a conditional update), and its result is stored only if the call is still
``running``.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import router, transaction
from django.db.models import QuerySet
from django.utils import timezone

from .. import signals
from ..conf import toolcalling_settings
from ..engine import CONTINUE_CONVERSATION, RUN_APPROVED_TOOL_CALL, enqueue, run_approved_call
from ..exceptions import NotRegistered, TaskQueueUnavailable
from ..models import Conversation, ToolCall
from ..models.tool_calls import this_process
from ..storage import answer_call_if, send_post_save, update_call_if, write_db
from ..toolkit import tools as tool_registry
from ._arguments import edit_note

logger = logging.getLogger("toolcalling")

# Calls of an answer that still keep the conversation from going on.
PENDING_STATUSES = (
    ToolCall.Status.AWAITING_APPROVAL,
    ToolCall.Status.APPROVED,
    ToolCall.Status.RUNNING,
    ToolCall.Status.OUTCOME_UNKNOWN,
)

WORKER_STOPPED = "the worker stopped while running this call"


def run(tool_call_id: int) -> bool:
    """The body of ``tasks.run_approved_tool_call``: run one approved call as the conversation's user, then
    continue the conversation if it was the last one pending. False when this delivery did not run it."""
    call = start_run(tool_call_id)
    if call is None:
        return False
    try:
        run_approved_call(call, note=edit_note(call))
    except NotRegistered as exc:
        fail_running(call, str(exc), f"Error: not run: {exc}")
        return False
    continue_when_decided(call.conversation)
    return True


def start_run(tool_call_id: int) -> ToolCall | None:
    """Move an approved call to ``running`` under a lease; ``None`` unless this caller won and must run it now.

    A call already ``running`` was started by an earlier delivery of the task. While that delivery's lease
    (``APPROVAL_RUN_TIMEOUT``) lasts it is left alone: it may well still be running. Once the lease has
    ended its worker is taken to be gone: an ``idempotent`` tool's call is taken over and run again (with the
    same ``ctx.idempotency_key``), any other waits for a person to say what happened (``outcome_unknown``),
    since the tool may have done its work already.
    """
    now = timezone.now()
    lease = now + timedelta(seconds=toolcalling_settings.APPROVAL_RUN_TIMEOUT)
    started = {"status": ToolCall.Status.RUNNING, "started_at": now, "lease_expires_at": lease}
    started["worker"] = this_process()  # who runs it: what the desk shows if it dies meanwhile
    calls = ToolCall.objects.using(router.db_for_write(ToolCall))  # the call that runs is read where it was moved
    if calls.filter(pk=tool_call_id, status=ToolCall.Status.APPROVED).update(**started):
        running = calls.select_related("conversation__user").get(pk=tool_call_id)
        send_post_save(running, started, calls.db)  # as the other changes of a call, which update() does not send
        return running
    call = ToolCall.objects.select_related("conversation").filter(pk=tool_call_id).first()
    if call is None:
        logger.warning("approved tool call %s no longer exists", tool_call_id)
    elif call.status == ToolCall.Status.RUNNING and lease_expired(call, now) and idempotent(call):
        # Taken over only from the lease that ended: of two deliveries (or a delivery and a sweep), one wins.
        ended = {"pk": tool_call_id, "status": ToolCall.Status.RUNNING, "lease_expires_at": call.lease_expires_at}
        if calls.filter(**ended).update(**started):
            logger.warning("tool call %s: its worker stopped; it runs again (its tool is idempotent)", call.pk)
            running = calls.select_related("conversation__user").get(pk=tool_call_id)
            send_post_save(running, started, calls.db)
            return running
    elif call.status == ToolCall.Status.RUNNING and lease_expired(call, now):
        mark_unknown(call)
    elif call.status == ToolCall.Status.RUNNING:
        logger.info("tool call %s is running under a live lease (until %s); left alone", call.pk, call.lease_expires_at)
    else:
        logger.info("tool call %s is %s already; not run again", call.pk, call.status)
    return None


def lease_expired(call: ToolCall, now: datetime) -> bool:
    """Whether the worker running ``call`` must be gone (calls started before leases: ``started_at`` + timeout)."""
    expires = call.lease_expires_at
    if expires is None and call.started_at is not None:
        expires = call.started_at + timedelta(seconds=toolcalling_settings.APPROVAL_RUN_TIMEOUT)
    return expires is None or expires <= now


def idempotent(call: ToolCall) -> bool:
    """Whether the call's tool says it may run again (``@tool(idempotent=True)``, or ``atomic=True``: what it wrote
    was rolled back with its process); a tool no longer registered (or an MCP server's) may not."""
    return tool_registry.is_registered(call.name) and tool_registry.get(call.name).may_run_again


def recover_interrupted(call: ToolCall, now: datetime | None = None) -> str | None:
    """A call whose worker stopped while it ran (its lease ended): queued to run again if its tool is
    ``idempotent`` (``"retried"``), else waiting for a person (``"unknown"``); never answered as if it had not
    run, never run again silently. ``None`` when it was answered meanwhile or the queue cannot be reached (the
    next sweep tries again)."""
    if not idempotent(call):
        return "unknown" if mark_unknown(call) else None
    if not update_call_if(call, ToolCall.Status.RUNNING, status=ToolCall.Status.APPROVED, lease_expires_at=None):
        return None
    try:
        enqueue_run(call)
    except TaskQueueUnavailable:
        # Left as it was found (a run whose lease ended), so that the next sweep queues it again.
        ended = now or timezone.now()
        update_call_if(call, ToolCall.Status.APPROVED, status=ToolCall.Status.RUNNING, lease_expires_at=ended)
        logger.warning("tool call %s could not be queued to run again", call.pk)
        return None
    logger.warning("tool call %s: its worker stopped; it runs again (its tool is idempotent)", call.pk)
    return "retried"


def mark_unknown(call: ToolCall) -> bool:
    """A running call whose worker stopped, of a tool that may not run again: it waits for a person to say
    whether it took effect (``outcome_unknown``, on the desk). False if it was answered meanwhile."""
    marked = update_call_if(
        call,
        ToolCall.Status.RUNNING,
        status=ToolCall.Status.OUTCOME_UNKNOWN,
        lease_expires_at=None,
        error=WORKER_STOPPED,
    )
    if marked:
        logger.error("tool call %s: %s; it waits for a person to say whether it took effect", call.pk, WORKER_STOPPED)
        signals.tool_call_outcome_unknown.send(ToolCall, tool_call=call)
    return marked


def fail_running(call: ToolCall, error: str, text: str) -> bool:
    """Answer a ``running`` approved call as failed and let the conversation go on; False if already answered."""
    message = answer_call_if(
        call, from_status=ToolCall.Status.RUNNING, status=ToolCall.Status.FAILED, result=text, error=error
    )
    if message is None:
        return False
    logger.error("tool call %s failed: %s", call.pk, error)
    continue_when_decided(call.conversation)
    return True


def enqueue_run(call: ToolCall) -> None:
    """Queue the run of an approved call (``TaskQueueUnavailable`` if the broker cannot be reached)."""
    enqueue(RUN_APPROVED_TOOL_CALL, call.pk)


def continue_when_decided(conversation: Conversation) -> None:
    """Enqueue the conversation's continuation once none of its calls is waiting, approved or running.

    Several calls finishing at once may each enqueue it; the continuation claims the conversation
    conditionally, so only one of them asks the model. A status read before the turn stopped to wait is read
    again, where decisions are written.
    """
    if conversation.status != Conversation.Status.AWAITING_APPROVAL:
        conversation.refresh_from_db(using=write_db(), fields=["status"])
    if conversation.status != Conversation.Status.AWAITING_APPROVAL or pending(conversation).exists():
        return
    conversation_id = conversation.pk
    transaction.on_commit(lambda: enqueue_continue(conversation_id), using=write_db())


def enqueue_continue(conversation_id: Any) -> None:
    try:
        enqueue(CONTINUE_CONVERSATION, str(conversation_id))
    except TaskQueueUnavailable:
        # The decision is stored; the sweep (continue_stalled) queues the continuation again later.
        logger.warning("the continuation of conversation %s could not be queued", conversation_id)


def pending(conversation: Conversation) -> QuerySet[ToolCall]:
    """The conversation's calls not answered yet, read where decisions are written: asked inside a decision's
    transaction (on `write_db()`), a read database (a replica, another connection) would not see the call just
    answered."""
    calls = ToolCall.objects.using(write_db())
    return calls.filter(conversation_id=conversation.pk, status__in=PENDING_STATUSES)
