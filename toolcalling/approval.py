"""Deciding on gated tool calls: approve, reject, cancel, expire — one place for the admin, the API and the tasks.

Every decision is a conditional ``UPDATE ... WHERE status = 'awaiting_approval'`` in the database, so of
two approvers, an approver and the user cancelling, or a decision and expiry, exactly one wins; the
others get ``AlreadyDecided``. An approval enqueues ``tasks.run_approved_tool_call`` after the
transaction commits; every other decision answers the call at once. When no call of the model's
answer is left undecided or running, ``tasks.continue_conversation`` asks the model again.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from . import signals, storage
from .assistant import Assistant
from .conf import toolcalling_settings
from .definitions import InvalidArguments, Tool
from .exceptions import AlreadyDecided, NotRegistered, TaskQueueUnavailable
from .models import Conversation, ToolCall

logger = logging.getLogger("toolcalling")

WAITING = ToolCall.Status.AWAITING_APPROVAL
# Calls of an answer that still keep the conversation from going on.
PENDING_STATUSES = (ToolCall.Status.AWAITING_APPROVAL, ToolCall.Status.APPROVED, ToolCall.Status.RUNNING)

WORKER_STOPPED = "the worker stopped while running this call"


# Arguments -------------------------------------------------------------------------------------------


def tool_for(call: ToolCall) -> Tool:
    """The tool a stored call names, as its conversation's assistant offers it."""
    assistant = Assistant.get(call.conversation.assistant_id)
    for candidate in assistant.resolve_tools():
        if candidate.name == call.name:
            return candidate
    raise NotRegistered(f"The assistant {assistant.id!r} has no tool named {call.name!r}.")


def validate_arguments(call: ToolCall, arguments: Any) -> dict[str, Any]:
    """Check edited arguments (JSON text or a dict) against the tool's signature.

    Raises ``InvalidArguments`` with a clear message, the same one the model would get."""
    try:
        tool = tool_for(call)
    except NotRegistered as exc:
        raise InvalidArguments(str(exc))
    return tool.parse_arguments(arguments).model_dump(mode="json")


def edit_arguments(call: ToolCall, user: Any, arguments: Any) -> ToolCall:
    """Replace a waiting call's arguments (validated), keeping the model's own in ``original_arguments``."""
    new = validate_arguments(call, arguments)
    if new == call.arguments:
        return call
    original = call.original_arguments if call.original_arguments is not None else call.arguments
    if not ToolCall.objects.filter(pk=call.pk, status=WAITING).update(arguments=new, original_arguments=original):
        raise _already_decided(call)
    call.arguments, call.original_arguments = new, original
    return call


def edit_note(call: ToolCall) -> str:
    """What the model is told before the result when an approver changed the arguments."""
    if call.original_arguments is None or call.original_arguments == call.arguments:
        return ""
    edited = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
    return f"Note: a staff member changed the arguments before approving; the tool ran with {edited}.\n"


# Decisions -------------------------------------------------------------------------------------------


def approve(call: ToolCall, user: Any, arguments: Any = None) -> ToolCall:
    """Approve a waiting call (optionally with edited arguments) and run it on a worker after commit."""
    with transaction.atomic():
        if arguments is not None:
            edit_arguments(call, user, arguments)
        now = timezone.now()
        if not ToolCall.objects.filter(pk=call.pk, status=WAITING).update(
            status=ToolCall.Status.APPROVED, decided_by=user, decided_at=now
        ):
            raise _already_decided(call)
        call.status, call.decided_by, call.decided_at = ToolCall.Status.APPROVED, user, now
        edited = " with edited arguments" if edit_note(call) else ""
        log_decision(call, user, f"Approved{edited}.")
        # Sent inside the decision's transaction, so receivers (and the event stream) hear of the
        # decision before the worker, started only after commit, can report the run.
        signals.tool_call_approved.send(ToolCall, tool_call=call, user=user)
        transaction.on_commit(lambda: _enqueue_run_or_wait_again(call, user))
    return call


def _enqueue_run_or_wait_again(call: ToolCall, user: Any) -> None:
    """Queue the run; if the broker cannot be reached, the call waits for approval again (nothing is lost)."""
    try:
        _enqueue_run(call.pk)
    except Exception as exc:
        logger.exception("tool call %s could not be queued; it waits for approval again", call.pk)
        if ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.APPROVED).update(
            status=WAITING, decided_by=None, decided_at=None
        ):
            call.status, call.decided_by, call.decided_at = WAITING, None, None
            log_decision(call, user, "Approval undone: the task queue could not be reached.")
        raise TaskQueueUnavailable(
            "The task queue could not be reached, so the call was not started; it waits for approval again."
        ) from exc


def reject(call: ToolCall, user: Any, reason: str = "") -> ToolCall:
    """Reject a waiting call: the model is told (with the reason) and the conversation goes on."""
    reason = reason.strip()
    text = "Not run: a staff member rejected this call." + (f" Reason: {reason}" if reason else "")
    now = timezone.now()
    with transaction.atomic():
        _decide(call, ToolCall.Status.REJECTED, text, decided_by=user, decided_at=now, decision_reason=reason)
        log_decision(call, user, f"Rejected: {reason}" if reason else "Rejected.")
        signals.tool_call_rejected.send(ToolCall, tool_call=call, user=user, reason=reason)
    return call


def cancel_waiting(conversation: Conversation, user: Any) -> list[ToolCall]:
    """The user withdraws every call still waiting; the conversation is freed without asking the model.

    Not asking the model keeps cancel cheap and predictable: the user cancelled because they want to
    say something else, and their next message reaches the model with the cancellations in the
    history. Calls approved before the cancel still run, and the conversation then goes on as usual.
    """
    cancelled = []
    for call in conversation.tool_calls.filter(status=WAITING).order_by("id"):
        try:
            _decide(
                call,
                ToolCall.Status.CANCELLED,
                "Not run: the user cancelled this call before a staff member decided.",
                continue_after=False,
                decided_by=user,
                decided_at=timezone.now(),
                decision_reason="Cancelled by the user.",
            )
        except AlreadyDecided:
            continue
        log_decision(call, user, "Cancelled by the user.")
        cancelled.append(call)
        signals.tool_call_cancelled.send(ToolCall, tool_call=call, user=user)
    if not _pending(conversation).exists():
        # Conditional, like every transition: a continuation that already claimed the conversation wins.
        Conversation.objects.filter(pk=conversation.pk, status=Conversation.Status.AWAITING_APPROVAL).update(
            status=Conversation.Status.IDLE, updated_at=timezone.now()
        )
        conversation.refresh_from_db(fields=["status"])
    return cancelled


def expire(now: datetime | None = None) -> list[ToolCall]:
    """Expire the calls that waited longer than ``APPROVAL_TIMEOUT``; the model is told, the conversation goes on."""
    timeout = toolcalling_settings.APPROVAL_TIMEOUT
    cutoff = (now or timezone.now()) - timedelta(seconds=timeout)
    expired = []
    for call in ToolCall.objects.filter(status=WAITING, created_at__lt=cutoff).select_related("conversation"):
        try:
            _decide(
                call,
                ToolCall.Status.EXPIRED,
                f"Not run: no staff member decided within {_duration(timeout)}, so the request expired.",
                decided_at=timezone.now(),
                decision_reason="Expired.",
            )
        except AlreadyDecided:
            continue
        expired.append(call)
        signals.tool_call_expired.send(ToolCall, tool_call=call)
    return expired


# Running (used by tasks.run_approved_tool_call) ------------------------------------------------------


def start_run(tool_call_id: int) -> ToolCall | None:
    """Move an approved call to ``running``; ``None`` unless this caller won and must run it now.

    A call already ``running`` means an earlier delivery of the task started it and its worker
    stopped (a delivery that is still running holds the task): it is answered as failed rather
    than run a second time, since the tool may have done its work already.
    """
    now = timezone.now()
    if ToolCall.objects.filter(pk=tool_call_id, status=ToolCall.Status.APPROVED).update(
        status=ToolCall.Status.RUNNING, started_at=now
    ):
        return ToolCall.objects.select_related("conversation__user").get(pk=tool_call_id)
    call = ToolCall.objects.select_related("conversation").filter(pk=tool_call_id).first()
    if call is None:
        logger.warning("approved tool call %s no longer exists", tool_call_id)
    elif call.status == ToolCall.Status.RUNNING:
        fail_interrupted(call)
    else:
        logger.info("tool call %s is %s already; not run again", call.pk, call.status)
    return None


def fail_interrupted(call: ToolCall) -> bool:
    """Answer a call left ``running`` by a stopped worker as failed (never re-run it)."""
    return fail_running(
        call, WORKER_STOPPED, f"Error: {WORKER_STOPPED}; it was not run again, and whether it took effect is unknown."
    )


def fail_running(call: ToolCall, error: str, text: str) -> bool:
    """Answer a ``running`` approved call as failed and let the conversation go on; False if already answered."""
    message = storage.answer_call_if(
        call, from_status=ToolCall.Status.RUNNING, status=ToolCall.Status.FAILED, result=text, error=error
    )
    if message is None:
        return False
    logger.error("tool call %s failed: %s", call.pk, error)
    continue_when_decided(call.conversation)
    return True


def fail_stalled(now: datetime | None = None) -> list[ToolCall]:
    """Mark approved calls ``running`` for longer than ``APPROVAL_RUN_TIMEOUT`` as failed (their worker died)."""
    cutoff = (now or timezone.now()) - timedelta(seconds=toolcalling_settings.APPROVAL_RUN_TIMEOUT)
    stalled = ToolCall.objects.filter(
        status=ToolCall.Status.RUNNING, requires_approval=True, started_at__lt=cutoff
    ).select_related("conversation")
    return [call for call in stalled if fail_interrupted(call)]


def continue_when_decided(conversation: Conversation) -> bool:
    """Enqueue the conversation's continuation once none of its calls is waiting, approved or running.

    Several calls finishing at once may each enqueue it; the continuation claims the conversation
    conditionally, so only one of them asks the model.
    """
    if conversation.status != Conversation.Status.AWAITING_APPROVAL:
        conversation.refresh_from_db(fields=["status"])
    if conversation.status != Conversation.Status.AWAITING_APPROVAL or _pending(conversation).exists():
        return False
    conversation_id = conversation.pk
    transaction.on_commit(lambda: _enqueue_continue(conversation_id))
    return True


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
        _enqueue_continue(conversation.pk)
        resumed.append(conversation)
    return resumed


def log_decision(call: ToolCall, user: Any, message: str) -> None:
    """Record a decision in the admin's history of the call (when the admin is installed)."""
    if user is None or not getattr(user, "pk", None) or not apps.is_installed("django.contrib.admin"):
        return
    from django.contrib.admin.models import CHANGE, LogEntry

    LogEntry.objects.log_actions(
        user.pk, ToolCall.objects.filter(pk=call.pk), CHANGE, change_message=message, single_object=True
    )


def waiting_calls() -> QuerySet[ToolCall]:
    """The calls awaiting a decision, oldest first, with what the admin and the API show about them."""
    return ToolCall.objects.filter(status=WAITING).select_related("conversation__user").order_by("created_at")


# Internals -------------------------------------------------------------------------------------------


def _decide(call: ToolCall, status: str, text: str, *, continue_after: bool = True, **fields: Any) -> None:
    """Answer a waiting call with ``text`` as its final ``status``, if it is still waiting."""
    with transaction.atomic():
        message = storage.answer_call_if(call, from_status=WAITING, status=status, result=text, **fields)
        if message is None:
            raise _already_decided(call)
        if continue_after:
            continue_when_decided(call.conversation)


def _pending(conversation: Conversation) -> QuerySet[ToolCall]:
    return ToolCall.objects.filter(conversation_id=conversation.pk, status__in=PENDING_STATUSES)


def _already_decided(call: ToolCall) -> AlreadyDecided:
    status = ToolCall.objects.filter(pk=call.pk).values_list("status", flat=True).first() or "deleted"
    label = dict(ToolCall.Status.choices).get(status, status)
    return AlreadyDecided(f"This tool call was already decided: it is {str(label).lower()}.", status=status)


def _duration(seconds: int) -> str:
    if seconds % 3600 == 0:
        hours = seconds // 3600
        return f"{hours} hour{'s' if hours != 1 else ''}"
    if seconds % 60 == 0:
        return f"{seconds // 60} minutes"
    return f"{seconds} seconds"


def _enqueue_run(tool_call_id: int) -> None:
    from .tasks import run_approved_tool_call

    run_approved_tool_call.delay(tool_call_id)


def _enqueue_continue(conversation_id: Any) -> None:
    from .tasks import continue_conversation

    try:
        continue_conversation.delay(str(conversation_id))
    except Exception:
        # The decision is stored; the sweep (continue_stalled) queues the continuation again later.
        logger.exception("the continuation of conversation %s could not be queued", conversation_id)
