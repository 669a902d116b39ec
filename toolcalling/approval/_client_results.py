"""Answering a client tool's call with the result the browser sends: the one place for the REST API and both
frontend protocols.

A client tool's call waits as a gated call does (``awaiting_approval``, ``approver="client"``), so stop, cancel,
expiry, the sweeps and the history treat it as any waiting call. Its "decision" is its result: taken from the
conversation's owner only, for a call that still waits, once (the conditional update every decision makes), and
checked against the tool's ``result_schema`` before anything is stored. Then the conversation goes on."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from .. import streaming
from ..engine import describe_call
from ..exceptions import DecisionNotAllowed, InvalidArguments, NotRegistered
from ..models import ToolCall
from ..storage import answer_call_if, write_db
from ..toolkit import ClientTool, client_result, result_to_text
from ._arguments import tool_for
from ._decisions import WAITING, _already_decided, log_decision, text_problem
from ._runs import continue_when_decided

ERROR_MAX_LENGTH = 2000  # of an error the client reports, as the model reads it


def answer_client_call(call: ToolCall, user: Any, *, result: Any = None, error: str | None = None) -> ToolCall:
    """Store what the browser's run of a client tool's call gave: ``result`` (any JSON value the tool's
    ``result_schema`` accepts; the text the model reads is ``result_to_text``'s), or ``error`` when it failed
    there. The conversation goes on once no call of its answer is left open.

    ``DecisionNotAllowed`` (403) for anyone but the conversation's owner, or for a call that is not a client
    tool's; ``AlreadyDecided`` (409) for a call no longer waiting (answered before, cancelled, expired, stopped);
    a ``ValidationError`` naming ``result`` (or ``error``) that does not fit, with nothing stored."""
    if not (user and user.is_authenticated) or call.conversation.user_id != user.pk:
        raise DecisionNotAllowed(
            _("Only the user of this conversation may send this call's result."), status=call.status
        )
    if call.approver != ToolCall.Approver.CLIENT:
        raise DecisionNotAllowed(
            _("This call does not run in the browser: it is approved or rejected, not answered with a result."),
            status=call.status,
        )
    if call.status != WAITING:
        raise _already_decided(call)
    status, text, failure = check_client_output(call, result=result, error=error)
    with transaction.atomic(using=write_db()):
        message = answer_call_if(call, from_status=WAITING, status=status, result=text, error=failure,
                                 decided_by=user, decided_at=timezone.now())  # fmt: skip
        if message is None:
            raise _already_decided(call)
        log_decision(
            call, user, _("Failed in the user's browser.") if failure else _("Answered by the user's browser.")
        )
        # Published once committed (a reader in another process reads the call's result then), and before the
        # continuation is queued (its on-commit comes after this one): readers hear of the result first.
        decided = describe_call(call)
        transaction.on_commit(lambda: streaming.publish(call.conversation_id, "tool_call_decided", decided),
                              using=write_db())  # fmt: skip
        continue_when_decided(call.conversation)
    return call


def check_client_output(call: ToolCall, *, result: Any = None, error: str | None = None) -> tuple[str, str, str]:
    """What answering ``call`` with ``result`` (or ``error``) would store: the call's status, the text the model
    reads and the error; a ``ValidationError`` naming ``result`` (or ``error``) for what cannot be stored."""
    if error is not None:
        text = error.strip()[:ERROR_MAX_LENGTH] or "the client reported an error"
        if problem := text_problem(text):
            raise ValidationError({"error": [problem]})
        return ToolCall.Status.FAILED, f"Error: {text}", text
    try:
        tool = tool_for(call)
    except NotRegistered:
        tool = None  # no longer offered (a frontend's tool not sent again): the result is taken as it is
    try:
        value = client_result(result, tool.result_schema if isinstance(tool, ClientTool) else None)
    except InvalidArguments as exc:
        raise ValidationError({"result": [str(exc)]})
    return ToolCall.Status.SUCCEEDED, result_to_text(value), ""
