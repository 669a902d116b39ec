"""A conversation's events as the Vercel AI SDK's UI message stream (v1), the chunks ``useChat`` reads.

Events name calls but never carry their arguments or results (see ``streaming.describe_call``); the chunks need
both, so they are read from the database as the events arrive: that is why ``uses_database`` is true.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..models import Message, ToolCall
from ..streaming import Event
from ..toolkit import tool_label

HEADER = "x-vercel-ai-ui-message-stream"
VERSION = "v1"
DONE = "data: [DONE]\n\n"

# How a call's final status reaches the SDK: its output, an error, or the "denied" of an approval said no to.
DENIED = {ToolCall.Status.REJECTED}
FAILED = {ToolCall.Status.FAILED, ToolCall.Status.CANCELLED, ToolCall.Status.EXPIRED}
# The SDK's finish reasons, by the status a turn ended with.
FINISH_REASONS = {"idle": "stop", "awaiting_approval": "tool-calls", "failed": "error"}


def chunk(type: str, **fields: Any) -> str:
    """One chunk as an SSE ``data`` line (the SDK reads ``data`` only; ids and comments it skips)."""
    return f"data: {json.dumps({'type': type, **fields}, separators=(',', ':'), default=str)}\n\n"


def reasoning_text(items: Iterable[dict[str, Any]]) -> str:
    """The readable part of stored reasoning: Responses summaries and Anthropic thinking (never encrypted items)."""
    texts = []
    for item in items or ():
        if item.get("type") == "thinking" and item.get("thinking"):
            texts.append(item["thinking"])
        for part in item.get("summary") or () if item.get("type") == "reasoning" else ():
            if part.get("text"):
                texts.append(part["text"])
    return "\n\n".join(texts)


def tool_output(result: str) -> Any:
    """A result as the UI gets it: the JSON value when the text the model read is JSON, else the text."""
    try:
        return json.loads(result)
    except (TypeError, ValueError):
        return result


def call_input(call: ToolCall) -> Any:
    """The call's arguments: validated ones once the call is handled, else what the model sent (as it sent it
    when that is no JSON)."""
    if call.arguments:
        return call.arguments
    return tool_output(call.raw_arguments or "{}")


class UIMessageStream:
    """Renders one response of a chat: ``start``, then per model call a step (its reasoning, text and tool parts,
    the calls' outputs and approval requests), then ``finish`` and ``[DONE]``.

    ``known``: the tool call ids (the model's) the client already shows, so their outputs attach to those
    parts; any other call is announced (``tool-input-*``) before its output. ``waiting``: calls to ask about
    again at the start (an answer the server did not take, such as the browser's answer to a staff call).
    """

    uses_database = True

    def __init__(self, conversation_id: Any, *, known: Iterable[str] = (), waiting: Iterable[ToolCall] = ()) -> None:
        self.conversation_id = conversation_id
        self.known = set(known)
        self.waiting = list(waiting)
        self.step_open = False
        self.answered = False  # the open step's model answer is stored: the next text is a new step
        self.text_id: str | None = None
        self.texts = 0  # text parts opened, for their ids
        self.streamed = False  # text came as deltas since the last stored answer
        self.status: str | None = None
        self.stopped = False
        self.failed = False
        self.error = ""  # the error chunk, sent once the turn's end is stored (its ``turn_end``)

    # The Renderer interface --------------------------------------------------------------------------

    def opening(self, after: int) -> str:
        return chunk("start") + "".join(self.approval_request(call) for call in self.waiting)

    def render(self, event: Event) -> str:
        handler = getattr(self, f"on_{event.type}", None)
        return handler(event.data) if handler is not None else ""

    def closing(self) -> str:
        out, self.error = self.end_text() + self.error + self.end_step(), ""
        reason = "error" if self.failed else FINISH_REASONS.get(self.status or "", "other")
        state: dict[str, Any] = {"conversation": str(self.conversation_id), "status": self.status}
        if self.stopped:
            state["stopped"] = True
        return out + chunk("finish", finishReason=reason, messageMetadata={"toolcalling": state}) + DONE

    # Events ------------------------------------------------------------------------------------------

    def on_delta(self, data: dict[str, Any]) -> str:
        out = self.begin_step()
        if self.text_id is None:
            self.texts += 1
            self.text_id = f"text-{self.texts}"
            out += chunk("text-start", id=self.text_id)
        self.streamed = True
        return out + chunk("text-delta", id=self.text_id, delta=data["content"])

    def on_message(self, data: dict[str, Any]) -> str:
        if data["role"] != Message.Role.ASSISTANT:
            return ""  # the user's own message the client has; a tool's result comes with its call's outcome
        message = Message.objects.filter(pk=data["id"]).first()
        if message is None:
            return ""
        out = self.begin_step()
        if thought := reasoning_text(message.provider_items or []):
            rid = f"reasoning-{message.pk}"
            out += chunk("reasoning-start", id=rid) + chunk("reasoning-delta", id=rid, delta=thought)
            out += chunk("reasoning-end", id=rid)
        if self.text_id is None and message.content and not self.streamed:
            # An answer that came whole (a direct result, a hook's ending): its text at once.
            self.texts += 1
            self.text_id = f"text-{self.texts}"
            out += chunk("text-start", id=self.text_id) + chunk("text-delta", id=self.text_id, delta=message.content)
        out += self.end_text()
        self.streamed = False
        calls = list(message.tool_calls.order_by("index"))
        for call in calls:
            out += self.announce(call)
        self.answered = True
        if not calls:
            out += self.end_step()
        return out

    def on_tool_call(self, data: dict[str, Any]) -> str:
        # Validated and gated now: its part gets the arguments it will run with and who decides it.
        call = self.call(data)
        if call is None:
            return ""
        again = self.input_available(call) if call.call_id in self.known else ""
        return self.announce(call) + again + self.approval_request(call)

    def on_tool_call_finished(self, data: dict[str, Any]) -> str:
        call = self.call(data)
        return self.outcome(call) if call is not None else ""

    def on_tool_call_decided(self, data: dict[str, Any]) -> str:
        # An approved call's outcome comes when it has run; the other decisions answer it at once.
        call = self.call(data)
        if call is None or call.status == ToolCall.Status.APPROVED:
            return ""
        return self.outcome(call)

    def on_error(self, data: dict[str, Any]) -> str:
        # Held until the turn's end: the SDK's chat is done at an error chunk, and a page that reads the
        # conversation then must find it ``failed`` already.
        self.failed = True
        self.error = chunk("error", errorText=data["detail"], code=data.get("code", "turn_failed"))
        return self.end_text()

    def on_turn_end(self, data: dict[str, Any]) -> str:
        self.status = data["status"]
        self.stopped = bool(data.get("stopped"))
        out, self.error = self.error, ""
        return out

    # Parts -------------------------------------------------------------------------------------------

    def call(self, data: dict[str, Any]) -> ToolCall | None:
        return ToolCall.objects.filter(pk=data["id"], conversation_id=self.conversation_id).first()

    def announce(self, call: ToolCall) -> str:
        """The call's tool part, once per stream (and never for one the client shows already)."""
        if call.call_id in self.known:
            return ""
        self.known.add(call.call_id)
        start = chunk("tool-input-start", toolCallId=call.call_id, toolName=call.name, title=str(tool_label(call.name)))
        return start + self.input_available(call)

    def input_available(self, call: ToolCall) -> str:
        # The app's own id of the call, and who decides it once it is gated, beside the SDK's fields.
        meta = {"toolcalling": {"id": call.pk, "approver": call.approver if call.requires_approval else None}}
        return chunk("tool-input-available", toolCallId=call.call_id, toolName=call.name,
                     title=str(tool_label(call.name)), input=call_input(call), providerMetadata=meta)  # fmt: skip

    def approval_request(self, call: ToolCall) -> str:
        # approvalId is the call's id in the REST API (tool-calls/{id}/), so a client may decide it there too.
        return chunk("tool-approval-request", approvalId=str(call.pk), toolCallId=call.call_id)

    def outcome(self, call: ToolCall) -> str:
        out = self.announce(call)
        if call.status == ToolCall.Status.SUCCEEDED:
            return out + chunk("tool-output-available", toolCallId=call.call_id, output=tool_output(call.result))
        if call.status in DENIED:
            return out + chunk("tool-output-denied", toolCallId=call.call_id)
        if call.status in FAILED:
            return out + chunk("tool-output-error", toolCallId=call.call_id, errorText=call.error or call.result)
        return out

    def begin_step(self) -> str:
        out = ""
        if self.step_open and self.answered:
            out = self.end_step()
        if not self.step_open:
            self.step_open, self.answered = True, False
            out += chunk("start-step")
        return out

    def end_step(self) -> str:
        if not self.step_open:
            return ""
        self.step_open = False
        return self.end_text() + chunk("finish-step")

    def end_text(self) -> str:
        if self.text_id is None:
            return ""
        text_id, self.text_id = self.text_id, None
        return chunk("text-end", id=text_id)
