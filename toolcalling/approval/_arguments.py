"""A waiting call's arguments: checked against the tool's signature when an approver edits them."""

from __future__ import annotations

import json
from typing import Any

from ..exceptions import InvalidArguments, NotRegistered
from ..models import ToolCall
from ..toolkit import Tool, assistants


def tool_for(call: ToolCall) -> Tool:
    """The tool a stored call names, as its conversation's assistant offers it to the conversation's user
    (an MCP server's tools included)."""
    conversation = call.conversation
    assistant = assistants.get(conversation.assistant_id)()
    for candidate in assistant.get_tools(assistant.build_context(conversation.user, conversation)):
        if candidate.name == call.name:
            return candidate
    raise NotRegistered(f"The assistant {assistant.id!r} has no tool named {call.name!r}.")


def validate_arguments(call: ToolCall, arguments: Any) -> dict[str, Any]:
    """Check edited arguments (JSON text or a dict) against the tool's signature, strictly: an approver's edit
    is taken as the schema says or refused (``"5"`` for an integer is refused, not read as 5).

    Raises ``InvalidArguments`` with a clear message, the same one the model would get."""
    try:
        tool = tool_for(call)
    except NotRegistered as exc:
        raise InvalidArguments(str(exc))
    return tool.parse_arguments(arguments, strict=True).model_dump(mode="json")


def edit_note(call: ToolCall) -> str:
    """What the model is told before the result when an approver changed the arguments."""
    if call.original_arguments is None or call.original_arguments == call.arguments:
        return ""
    edited = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
    who = "the user" if call.approver == ToolCall.Approver.USER else "a staff member"
    return f"Note: {who} changed the arguments before approving; the tool ran with {edited}.\n"
