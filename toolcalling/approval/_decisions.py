"""Deciding on gated tool calls: approve, reject, cancel, expire — one place for the admin, the API and the tasks.

Every decision is a conditional ``UPDATE ... WHERE status = 'awaiting_approval'`` in the database, so of
two approvers, an approver and the user cancelling, or a decision and expiry, exactly one wins; the
others get ``AlreadyDecided``. An approval queues the run of the call after the transaction commits;
every other decision answers the call at once. When no call of the model's answer is left undecided
or running, the conversation's continuation asks the model again (see ``_runs``).
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.dispatch import Signal
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from .. import signals, streaming
from ..conf import toolcalling_settings
from ..engine import describe_call
from ..exceptions import AlreadyDecided, InvalidArguments, TaskQueueUnavailable
from ..models import Conversation, ToolCall
from ..storage import answer_call_if, update_call_if, write_db
from ._arguments import edit_note, validate_arguments
from ._rights import check_may_decide
from ._runs import continue_when_decided, enqueue_run, pending

logger = logging.getLogger("toolcalling")

WAITING = ToolCall.Status.AWAITING_APPROVAL
UNKNOWN = ToolCall.Status.OUTCOME_UNKNOWN
REASON_MAX_LENGTH = 2000  # of a decision's reason, as the model is told it and the admin's history keeps it
_SURROGATE = re.compile("[\ud800-\udfff]")


# Validation ------------------------------------------------------------------------------------------


def validate_decision(
    call: ToolCall | None = None, *, reason: str | None = None, arguments: Any = None
) -> tuple[str, dict[str, Any] | None]:
    """The one check of a decision, whichever way it comes (the API, the AI SDK's and AG-UI's answers, the
    admin): ``reason`` stripped, at most ``REASON_MAX_LENGTH`` characters, with no NUL and no lone surrogate
    (neither can be stored everywhere); edited ``arguments`` as ``validate_arguments`` takes them (``call``'s).

    Returns the reason and the validated arguments (``None`` when none were given); a ``ValidationError`` whose
    ``message_dict`` names each field that is wrong, before anything is decided or stored."""
    errors: dict[str, list[str]] = {}
    cleaned = ""
    if reason is not None:
        cleaned = reason.strip()
        problem = text_problem(cleaned)
        if not problem and len(cleaned) > REASON_MAX_LENGTH:
            problem = _("The reason is too long: it may have at most %(limit)d characters.") % {
                "limit": REASON_MAX_LENGTH
            }
        if problem:
            errors["reason"] = [problem]
    validated = None
    if arguments is not None:
        if call is None:
            raise TypeError("validate_decision() needs the call to check edited arguments against its tool.")
        try:
            validated = validate_arguments(call, arguments)
        except InvalidArguments as exc:
            errors["arguments"] = [str(exc)]
    if errors:
        raise ValidationError(errors)
    return cleaned, validated


def text_problem(text: str) -> str:
    """Why ``text`` cannot be stored or sent on (``""`` when it can): a NUL, which PostgreSQL refuses in text, or
    a lone surrogate, which no UTF-8 database, page or event stream carries. In DRF's own words."""
    if "\x00" in text:
        return _("Null characters are not allowed.")
    found = _SURROGATE.search(text)
    if found:
        return _("Surrogate characters are not allowed: U+{code_point:X}.").format(code_point=ord(found.group()))
    return ""


# Arguments -------------------------------------------------------------------------------------------


def edit_arguments(call: ToolCall, user: Any, arguments: Any) -> ToolCall:
    """Replace a waiting call's arguments (validated), keeping the model's own in ``original_arguments``.

    Only someone who may approve the call may change them (``DecisionNotAllowed`` otherwise)."""
    check_may_decide(call, user, approving=True)
    new = validate_arguments(call, arguments)
    if new == call.arguments:
        return call
    original = call.original_arguments if call.original_arguments is not None else call.arguments
    if not update_call_if(call, WAITING, arguments=new, original_arguments=original):
        raise _already_decided(call)
    return call


# Decisions -------------------------------------------------------------------------------------------


def approve(call: ToolCall, user: Any, arguments: Any = None) -> ToolCall:
    """Approve a waiting call (optionally with edited arguments) and run it on a worker after commit.

    ``DecisionNotAllowed`` (403) unless ``user`` may approve it: an approver for staff calls, never for
    their own conversation unless ``APPROVER_MAY_BE_REQUESTER``; the conversation's user for user calls.

    Outside a transaction (the API's views) a broker that cannot be reached undoes the approval and raises
    ``TaskQueueUnavailable`` (503). Inside the caller's transaction (``ATOMIC_REQUESTS``, the admin's change
    form) the task is queued when that commits; if it cannot be, the call waits for approval again.
    """
    check_may_decide(call, user, approving=True)
    db = write_db()
    nested = transaction.get_connection(db).in_atomic_block
    with transaction.atomic(using=db):
        if arguments is not None:
            edit_arguments(call, user, arguments)
        now = timezone.now()
        if not update_call_if(call, WAITING, status=ToolCall.Status.APPROVED, decided_by=user, decided_at=now):
            raise _already_decided(call)
        by_user = call.approver != ToolCall.Approver.STAFF
        # The admin's history of the call, for staff (the model is told of edits by the run's note).
        edited = bool(edit_note(call))
        if by_user:
            logged = _("Confirmed by the user with edited arguments.") if edited else _("Confirmed by the user.")
        else:
            logged = _("Approved with edited arguments.") if edited else pgettext("toolcalling approval", "Approved.")
        log_decision(call, user, logged)
        # Sent inside the decision's transaction, so receivers (and the event stream) hear of the
        # decision before the worker, started only after commit, can report the run.
        _announce(signals.tool_call_approved, call, user=user)
        if nested:
            transaction.on_commit(lambda: _enqueue_run_or_wait_again(call, user), using=db, robust=True)
    if not nested:
        _enqueue_run_or_wait_again(call, user)
    return call


def _enqueue_run_or_wait_again(call: ToolCall, user: Any) -> None:
    """Queue the run; if the broker cannot be reached, the call waits for approval again (nothing is lost)."""
    try:
        enqueue_run(call)
    except TaskQueueUnavailable as exc:
        logger.exception("tool call %s could not be queued; it waits for approval again", call.pk)
        if update_call_if(call, ToolCall.Status.APPROVED, status=WAITING, decided_by=None, decided_at=None):
            log_decision(call, user, _("Approval undone: the task queue could not be reached."))
        raise TaskQueueUnavailable(
            _("The task queue could not be reached, so the call was not started; it waits for approval again."),
            status=WAITING,
        ) from exc


def reject(call: ToolCall, user: Any, reason: str = "") -> ToolCall:
    """Reject (for user calls: decline) a waiting call: the model is told who said no and why, and the
    conversation goes on. ``DecisionNotAllowed`` (403) unless ``user`` may decide it; a ``ValidationError``
    for a reason ``validate_decision`` refuses, with nothing decided."""
    check_may_decide(call, user, approving=False)
    reason = validate_decision(call, reason=reason)[0]
    by_user = call.approver != ToolCall.Approver.STAFF
    # What the model reads says who refused, so it can answer the user accordingly.
    text = "Not run: the user declined this call." if by_user else "Not run: a staff member rejected this call."
    text += f" Reason: {reason}" if reason else ""
    now = timezone.now()
    with transaction.atomic(using=write_db()):
        _decide(call, ToolCall.Status.REJECTED, text, decided_by=user, decided_at=now, decision_reason=reason)
        if reason:
            logged = (
                _("Declined by the user: %(reason)s")
                if by_user
                else pgettext("toolcalling approval", "Rejected: %(reason)s")
            )
            log_decision(call, user, logged % {"reason": reason})
        else:
            log_decision(
                call, user, _("Declined by the user.") if by_user else pgettext("toolcalling approval", "Rejected.")
            )
        _announce(signals.tool_call_rejected, call, user=user, reason=reason)
    return call


SETTLEMENTS = ("succeeded", "failed", "retry")


def settle(call: ToolCall, user: Any, outcome: str, result: str = "") -> ToolCall:
    """Say what became of a call whose process died while it ran (``outcome_unknown``), and go on from there:

    - ``"succeeded"``: it took effect; ``result`` is what the model is told (a default sentence when empty);
    - ``"failed"``: it did not take effect; ``result`` says why;
    - ``"retry"``: run it again on a worker (with the same ``ctx.idempotency_key``), as an approval does.

    Who may say so is who decides the call: an approver for a staff call (the four-eyes rule applies to running
    it again only), the conversation's user for a user call. ``AlreadyDecided`` when someone said it first.
    Once no call of the answer is left open, the conversation goes on as after any decision."""
    if outcome not in SETTLEMENTS:
        raise ValueError(f"outcome must be one of {', '.join(SETTLEMENTS)}, not {outcome!r}")
    check_may_decide(call, user, approving=outcome == "retry")
    result = validate_decision(call, reason=result)[0]
    by_user = call.approver != ToolCall.Approver.STAFF
    who = "the user" if by_user else "a staff member"
    now = timezone.now()
    decided = {"decided_by": user, "decided_at": now, "decision_reason": result}
    if outcome == "retry":
        db = write_db()
        nested = transaction.get_connection(db).in_atomic_block
        with transaction.atomic(using=db):
            if not update_call_if(call, UNKNOWN, status=ToolCall.Status.APPROVED, lease_expires_at=None, **decided):
                raise _already_decided(call)
            log_decision(call, user, _("Outcome unknown: run again."))
            if nested:
                transaction.on_commit(lambda: _enqueue_run_or_unknown_again(call), using=db, robust=True)
        if not nested:
            _enqueue_run_or_unknown_again(call)
        return call
    if outcome == "succeeded":
        text = (
            result
            or f"Done: {who} confirmed that it took effect (its process had stopped before its result was stored)."
        )
        status, logged = ToolCall.Status.SUCCEEDED, _("Outcome unknown: marked as done.")
    else:
        text = f"Error: it did not take effect, as {who} found after its process stopped."
        text += f" {result}" if result else ""
        status, logged = ToolCall.Status.FAILED, _("Outcome unknown: marked as failed.")
    with transaction.atomic(using=write_db()):
        message = answer_call_if(
            call,
            from_status=UNKNOWN,
            status=status,
            result=text,
            error="" if status == ToolCall.Status.SUCCEEDED else text,
            **decided,
        )
        if message is None:
            raise _already_decided(call)
        log_decision(call, user, logged)
        continue_when_decided(call.conversation)
    streaming.publish(call.conversation_id, "tool_call_decided", describe_call(call))
    return call


def _enqueue_run_or_unknown_again(call: ToolCall) -> None:
    """Queue the run; if the broker cannot be reached, the call's outcome is unknown again (nothing is lost)."""
    try:
        enqueue_run(call)
    except TaskQueueUnavailable as exc:
        logger.exception("tool call %s could not be queued; its outcome stays unknown", call.pk)
        update_call_if(call, ToolCall.Status.APPROVED, status=UNKNOWN, decided_by=None, decided_at=None)
        raise TaskQueueUnavailable(
            _("The task queue could not be reached, so the call was not started; its outcome is still unknown."),
            status=UNKNOWN,
        ) from exc


def cancel_waiting(conversation: Conversation, user: Any) -> list[ToolCall]:
    """The user withdraws every call still waiting; the conversation is freed without asking the model.

    Not asking the model keeps cancel cheap and predictable: the user cancelled because they want to
    say something else, and their next message reaches the model with the cancellations in the
    history. Calls approved before the cancel still run, and the conversation then goes on as usual.
    """
    cancelled = []
    for call in conversation.tool_calls.filter(status=WAITING).order_by("id"):
        by_user = call.approver != ToolCall.Approver.STAFF
        try:
            _decide(
                call,
                ToolCall.Status.CANCELLED,
                "Not run: the user cancelled this call."
                if by_user
                else "Not run: the user cancelled this call before a staff member decided.",
                continue_after=False,
                decided_by=user,
                decided_at=timezone.now(),
                decision_reason=_("Cancelled by the user."),
            )
        except AlreadyDecided:
            continue
        log_decision(call, user, _("Cancelled by the user."))
        cancelled.append(call)
        _announce(signals.tool_call_cancelled, call, user=user)
    if not pending(conversation).exists():
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
            who = "the user did not confirm" if call.approver != ToolCall.Approver.STAFF else "no staff member decided"
            _decide(
                call,
                ToolCall.Status.EXPIRED,
                f"Not run: {who} within {_duration(timeout)}, so the request expired.",
                decided_at=timezone.now(),
                decision_reason=pgettext("toolcalling approval", "Expired."),
            )
        except AlreadyDecided:
            continue
        expired.append(call)
        _announce(signals.tool_call_expired, call)
    return expired


def log_decision(call: ToolCall, user: Any, message: str) -> None:
    """Record a decision in the admin's history of the call (when the admin is installed). ``user`` decided it:
    a stored user, since every caller checked first that they may (``check_may_decide``) or stores them as
    ``decided_by``."""
    if not apps.is_installed("django.contrib.admin"):
        return
    from django.contrib.admin.models import CHANGE, LogEntry

    # The call itself, not a queryset of it: the entry needs nothing the caller has not loaded already.
    LogEntry.objects.log_actions(user.pk, [call], CHANGE, change_message=message)


def waiting_calls() -> QuerySet[ToolCall]:
    """The calls awaiting a staff decision, longest-waiting first, with what the admin and the API show of them."""
    return (
        ToolCall.objects.filter(status=WAITING, approver=ToolCall.Approver.STAFF)
        .select_related("conversation__user")
        .order_by("created_at", "id")
    )


# Internals -------------------------------------------------------------------------------------------


def _decide(call: ToolCall, status: str, text: str, *, continue_after: bool = True, **fields: Any) -> None:
    """Answer a waiting call with ``text`` as its final ``status``, if it is still waiting."""
    with transaction.atomic(using=write_db()):
        message = answer_call_if(call, from_status=WAITING, status=status, result=text, **fields)
        if message is None:
            raise _already_decided(call)
        if continue_after:
            continue_when_decided(call.conversation)


def _already_decided(call: ToolCall) -> AlreadyDecided:
    status = ToolCall.objects.filter(pk=call.pk).values_list("status", flat=True).first() or "deleted"
    label = dict(ToolCall.Status.choices).get(status, pgettext("toolcalling approval", "deleted"))
    return AlreadyDecided(
        _("This tool call was already decided: it is %(status)s.") % {"status": str(label).lower()}, status=status
    )


def _duration(seconds: int) -> str:
    if seconds % 3600 == 0:
        hours = seconds // 3600
        return f"{hours} hour{'s' if hours != 1 else ''}"
    if seconds % 60 == 0:
        minutes = seconds // 60
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def _announce(signal: Signal, call: ToolCall, **kwargs: Any) -> None:
    """Tell receivers of ``signal`` and the conversation's event stream that a waiting call was decided."""
    signal.send(ToolCall, tool_call=call, **kwargs)
    streaming.publish(call.conversation_id, "tool_call_decided", describe_call(call))
