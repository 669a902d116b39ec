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

from ..conf import toolcalling_settings
from ..engine import (
    CONTINUE_CONVERSATION,
    RUN_APPROVED_TOOL_CALL,
    answer_call_if,
    enqueue,
    run_approved_call,
    send_post_save,
    write_db,
)
from ..exceptions import NotRegistered, TaskQueueUnavailable
from ..models import Conversation, ToolCall
from ._arguments import edit_note

logger = logging.getLogger("toolcalling")

# Calls of an answer that still keep the conversation from going on.
PENDING_STATUSES = (ToolCall.Status.AWAITING_APPROVAL, ToolCall.Status.APPROVED, ToolCall.Status.RUNNING)

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
    ended its worker is taken to be gone, and the call is answered as failed rather than run a second
    time, since the tool may have done its work already.
    """
    now = timezone.now()
    lease = now + timedelta(seconds=toolcalling_settings.APPROVAL_RUN_TIMEOUT)
    started = {"status": ToolCall.Status.RUNNING, "started_at": now, "lease_expires_at": lease}
    calls = ToolCall.objects.using(router.db_for_write(ToolCall))  # the call that runs is read where it was moved
    if calls.filter(pk=tool_call_id, status=ToolCall.Status.APPROVED).update(**started):
        running = calls.select_related("conversation__user").get(pk=tool_call_id)
        send_post_save(running, started, calls.db)  # as the other changes of a call, which update() does not send
        return running
    call = ToolCall.objects.select_related("conversation").filter(pk=tool_call_id).first()
    if call is None:
        logger.warning("approved tool call %s no longer exists", tool_call_id)
    elif call.status == ToolCall.Status.RUNNING and lease_expired(call, now):
        fail_interrupted(call)
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


def fail_interrupted(call: ToolCall) -> bool:
    """Answer a call left ``running`` by a stopped worker as failed (never re-run it)."""
    return fail_running(
        call, WORKER_STOPPED, f"Error: {WORKER_STOPPED}; it was not run again, and whether it took effect is unknown."
    )


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
