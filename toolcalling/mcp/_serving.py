"""What the MCP endpoint serves: an assistant's tools for one user, one call on the chat's call path, and the
built-in ``get_tool_call_status`` that reads the outcome of a call that waited for approval."""

from __future__ import annotations

import json
from functools import cached_property
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext, pgettext

from ..engine import call_directly, tool_definitions
from ..exceptions import TurnError
from ..models import Conversation, ToolCall
from ..toolkit import ClientTool

if TYPE_CHECKING:
    from ..assistant import Assistant

STATUS_TOOL = "get_tool_call_status"
FINISHED: tuple[ToolCall.Status, ...] = (ToolCall.Status.SUCCEEDED, ToolCall.Status.FAILED, ToolCall.Status.REJECTED)
FINISHED += (ToolCall.Status.CANCELLED, ToolCall.Status.EXPIRED)

STATUS_SCHEMA = {
    "type": "object",
    "properties": {
        "tool_call_id": {"type": "integer", "description": "The id that a call waiting for approval was given."}
    },
    "required": ["tool_call_id"],
}


class Outcome:
    """A ``tools/call`` result: text for the client's model, structured content, and whether it is an error."""

    def __init__(self, text: str, *, error: bool = False, data: dict[str, Any] | None = None) -> None:
        self.text, self.error, self.data = text, error, data


class UnknownTool(LookupError):
    """The client asked for a tool this endpoint does not serve to this user (a protocol error, not a tool's)."""


class ServedTools:
    """The tools ``assistant`` offers ``user``, as MCP serves them: the same list and schemas the model gets
    (tool permissions, argument extras and MCP servers' tools included; tool search is the client's business,
    so every tool is listed), plus ``get_tool_call_status``."""

    def __init__(self, assistant: Assistant, user: Any) -> None:
        self.assistant = assistant
        self.user = user

    @cached_property
    def definitions(self) -> list[dict[str, Any]]:
        """Chat Completions tool definitions of the offered tools (listing MCP servers' tools if needed)."""
        ctx = self.assistant.build_context(self.user, None)
        # A client tool runs in the browser of the site's chat, which an MCP client is not: never served.
        served = [t for t in self.assistant.get_tools(ctx) if not isinstance(t, ClientTool)]
        return [d["function"] for d in tool_definitions(self.assistant, served)]

    @property
    def serves_status_tool(self) -> bool:
        """The built-in status tool, unless the site has a tool of that name (the site's names win)."""
        return all(d["name"] != STATUS_TOOL for d in self.definitions)

    def listing(self) -> list[dict[str, Any]]:
        """``name``, ``description`` and ``inputSchema`` of every tool served."""
        tools = [
            {"name": d["name"], "description": d["description"], "inputSchema": d["parameters"]}
            for d in self.definitions
        ]
        if self.serves_status_tool:
            tools.append(
                {
                    "name": STATUS_TOOL,
                    "description": gettext(
                        "Read the status and, once it ran, the result of a tool call that waited for approval."
                    ),
                    "inputSchema": STATUS_SCHEMA,
                }
            )
        return tools

    def call(self, name: str, arguments: dict[str, Any] | None) -> Outcome:
        """Run one call as a chat turn would, stored in a conversation of its own; ``UnknownTool`` if not served."""
        if name == STATUS_TOOL and self.serves_status_tool:
            return self.status(arguments or {})
        if all(d["name"] != name for d in self.definitions):
            raise UnknownTool(name)
        title = pgettext("toolcalling", "MCP: %(tool)s") % {"tool": name}
        try:
            call = call_directly(
                self.assistant, self.user, name, arguments, origin=Conversation.Origin.MCP, title=title
            )
        except TurnError as exc:  # TOOL_ERRORS = "raise": the call is stored as failed, the client is told why
            return Outcome(str(exc), error=True)
        if call is None:
            return Outcome(gettext("The call was not made: the assistant ended the turn first."), error=True)
        if call.status == ToolCall.Status.AWAITING_APPROVAL:
            return self._waiting(call)
        return Outcome(call.result, error=call.status != ToolCall.Status.SUCCEEDED)

    def status(self, arguments: dict[str, Any]) -> Outcome:
        """The built-in tool: where a call of this user's with this assistant stands, and its result once done."""
        call_id = arguments.get("tool_call_id")
        if not isinstance(call_id, int) or isinstance(call_id, bool):
            return Outcome(gettext("tool_call_id must be an integer."), error=True)
        call = ToolCall.objects.filter(
            pk=call_id, conversation__user=self.user, conversation__assistant_id=self.assistant.id
        ).first()
        if call is None:
            return Outcome(gettext("You have no tool call %(id)s with this assistant.") % {"id": call_id}, error=True)
        data: dict[str, Any] = {"tool_call_id": call.pk, "tool": call.name, "status": call.status}
        if call.status in FINISHED:
            data["result"] = call.result
            if call.decision_reason:
                data["decision_reason"] = call.decision_reason
        else:
            data["note"] = gettext("Not finished yet; ask again later.")
        return Outcome(json.dumps(data, ensure_ascii=False), data=data)

    def _waiting(self, call: ToolCall) -> Outcome:
        """The result of a call that waits: who decides it (stored with the wait), and how to read its outcome."""
        if call.approver == ToolCall.Approver.USER:  # the client's own user confirms it, on the site
            text = gettext(
                "This call waits for you to confirm it on the site and has not run yet. Its tool call id is "
                '%(id)s: call %(tool)s with {"tool_call_id": %(id)s} later to read its outcome.'
            )
        else:
            text = gettext(
                "This call waits for a staff member's approval and has not run yet. Its tool call id is %(id)s: "
                'call %(tool)s with {"tool_call_id": %(id)s} later to read its outcome.'
            )
        text %= {"id": call.pk, "tool": STATUS_TOOL}
        return Outcome(text, data={"tool_call_id": call.pk, "tool": call.name, "status": call.status})
