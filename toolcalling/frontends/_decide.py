"""What a person needs to decide a waiting call, as both frontend protocols carry it: the tool's label, the
arguments (in the tool's parameter order, as the API and the chat page show them) and the tool's preview, the
same ``{"value", "error"}`` the API gives and the same plain text the staff notification and the chat page show.

The preview is computed now (never stale) and only for someone who may decide the call, as the API's ``preview``
is: the conversation's owner gets it for the calls they confirm themselves, not for a staff member's."""

from __future__ import annotations

from typing import Any

from .. import approval
from ..models import ToolCall
from ..toolkit import tool_label
from ..web import in_parameter_order


def decision_aid(call: ToolCall, user: Any) -> dict[str, Any]:
    """``{"title", "arguments", "approver", "preview", "previewText"}``; the preview keys are ``None`` when the
    tool has none or ``user`` may not decide the call."""
    aid: dict[str, Any] = {
        "title": str(tool_label(call.name)),
        "arguments": in_parameter_order(call.name, call.arguments),
        "approver": call.approver,
        "preview": None,
        "previewText": None,
    }
    if user is not None and call.status == ToolCall.Status.AWAITING_APPROVAL and approval.may_decide(call, user):
        found = approval.preview(call)
        if found is not None:
            aid["preview"], aid["previewText"] = found.as_data(), found.as_text()
    return aid
