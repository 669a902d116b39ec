"""Who may decide on a gated tool call: approvers for staff calls (never their own, by default), the
conversation's own user for calls marked ``approver="user"``."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from ..conf import toolcalling_settings
from ..exceptions import DecisionNotAllowed, RequesterMayNotApprove
from ..models import ToolCall

APPROVE_PERMISSION = "toolcalling.approve_toolcall"


def can_approve(user: Any) -> bool:
    """Whether ``user`` may decide staff calls (the ``toolcalling.approve_toolcall`` permission)."""
    return bool(user and user.is_authenticated and user.has_perm(APPROVE_PERMISSION))


def refusal(call: ToolCall, user: Any, *, approving: bool) -> DecisionNotAllowed | None:
    """Why ``user`` may not decide ``call`` (the error to raise), or ``None`` when they may.

    ``approving`` covers approving and editing the arguments: the four-eyes rule keeps a staff member from
    approving a call of their own conversation, but not from rejecting it.
    """
    status = call.status
    if not (user and user.is_authenticated):
        return DecisionNotAllowed(status=status)
    requester_id = call.conversation.user_id
    if call.approver == ToolCall.Approver.CLIENT:
        # A client tool's call is answered with its result (``answer_client_call``); its owner may decline it.
        if requester_id != user.pk:
            return DecisionNotAllowed(_("Only the user of this conversation may answer this call."), status=status)
        if approving:
            return DecisionNotAllowed(
                _("This call runs in the browser: send its result instead of approving it."), status=status
            )
        return None
    if call.approver == ToolCall.Approver.USER:
        if requester_id != user.pk:
            return DecisionNotAllowed(
                _("Only the user of this conversation may confirm or decline this call."), status=status
            )
        return None
    if not can_approve(user):
        return DecisionNotAllowed(
            _("You need the permission %(permission)s to decide on tool calls.") % {"permission": APPROVE_PERMISSION},
            status=status,
        )
    if approving and requester_id == user.pk and not toolcalling_settings.APPROVER_MAY_BE_REQUESTER:
        return RequesterMayNotApprove(
            _(
                "You asked for this call in your own conversation, so another staff member has to approve it "
                "(you may still reject it)."
            ),
            status=status,
        )
    return None


def check_may_decide(call: ToolCall, user: Any, *, approving: bool) -> None:
    """Raise ``DecisionNotAllowed`` (403) unless ``user`` may decide ``call``."""
    error = refusal(call, user, approving=approving)
    if error is not None:
        raise error


def may_decide(call: ToolCall, user: Any, *, approving: bool = False) -> bool:
    return refusal(call, user, approving=approving) is None
