"""A conversation's events as the Vercel AI SDK's UI message stream (v1), the chunks ``useChat`` reads.

Events name calls but never carry their arguments or results (see ``streaming.describe_call``); the chunks need
both, so they are read from the database as the events arrive: that is why ``uses_database`` is true.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Any

from django.urls import reverse

from ..models import Conversation, Message, ToolCall
from ..streaming import Event
from ..toolkit import tool_label
from ._client_tools import client_tool_names
from ._decide import decision_aid

HEADER = "x-vercel-ai-ui-message-stream"
VERSION = "v1"
DONE = "data: [DONE]\n\n"

# How a call's final status reaches the SDK: its output, an error, or the "denied" of an approval said no to.
DENIED = {ToolCall.Status.REJECTED}
FAILED = {ToolCall.Status.FAILED, ToolCall.Status.CANCELLED, ToolCall.Status.EXPIRED}
# The statuses a gated call only reaches once approved.
APPROVED_ONCE = {ToolCall.Status.APPROVED, ToolCall.Status.RUNNING, ToolCall.Status.SUCCEEDED, ToolCall.Status.FAILED}
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


def approval_of(call: ToolCall) -> dict[str, Any] | None:
    """A gated call's ``approval`` as the SDK's tool parts keep it once decided: ``None`` while it waits, for a
    call no one approved (cancelled, expired, or not gated) and for one whose decision is unknown. A client tool's
    call has one only once declined: its result is its output, not an approval."""
    if not call.requires_approval or (call.approver == ToolCall.Approver.CLIENT and call.status not in DENIED):
        return None
    if call.status in DENIED:
        return {"id": str(call.pk), "approved": False, "reason": call.decision_reason or ""}
    if call.status in APPROVED_ONCE and call.decided_at is not None:
        return {"id": str(call.pk), "approved": True}
    return None


def tool_part(call: ToolCall, user: Any) -> dict[str, Any]:
    """A stored call as the SDK's tool part (``tool-{name}``), in the state the live stream leaves it in."""
    meta = {"toolcalling": {"id": call.pk, "approver": call.approver if call.requires_approval else None}}
    part: dict[str, Any] = {"type": f"tool-{call.name}", "toolCallId": call.call_id,
                            "title": str(tool_label(call.name)), "input": call_input(call),
                            "callProviderMetadata": meta}  # fmt: skip
    decided = approval_of(call)
    if call.status == ToolCall.Status.AWAITING_APPROVAL and call.approver == ToolCall.Approver.CLIENT:
        part["state"] = "input-available"  # the browser runs it and sends its output (``addToolOutput``)
    elif call.status == ToolCall.Status.AWAITING_APPROVAL:
        part["state"] = "approval-requested"
        part["approval"] = {"id": str(call.pk), "descriptor": decision_aid(call, user)}
    elif call.status == ToolCall.Status.SUCCEEDED:
        part["state"], part["output"] = "output-available", tool_output(call.result)
    elif call.status in DENIED:
        part["state"] = "output-denied"
        decided = decided or {"id": str(call.pk), "approved": False}
    elif call.status in FAILED:
        part["state"], part["errorText"] = "output-error", call.error or call.result or call.status
    else:  # approved or running (or a status this module does not name): its outcome is still to come
        part["state"] = "approval-responded" if decided is not None else "input-available"
    if decided is not None:
        part["approval"] = decided
    return part


def answer_id(question: Message | None) -> str:
    """The UI message id of the assistant's answer to a user message, the same in the stream that answers it,
    in a resumed stream and in the history: so a resumed stream replaces the message the page shows."""
    return f"answer-{question.pk if question is not None else 0}"


def ui_messages(
    messages: Iterable[Message], *, user: Any, metadata: dict[str, Any], absolute: Callable[[str], str]
) -> list[dict[str, Any]]:
    """Stored messages as the SDK's ``UIMessage`` list, what ``useChat({ messages })`` starts from: a user
    message per user message (its text and files), and one assistant message for everything the assistant did
    between two of them, a ``step-start`` per model answer (its reasoning, text and tool parts, each call in its
    state with its outcome). Tool messages are not messages of their own: their results are their calls'
    outputs, as in the stream. ``metadata`` goes on the last assistant message, as the stream's ``finish`` puts
    it; ``absolute`` makes a file's URL absolute."""
    found: list[dict[str, Any]] = []
    answer: dict[str, Any] | None = None
    asked: Message | None = None
    for message in messages:
        if message.role == Message.Role.USER:
            answer, asked = None, message
            parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
            for file in message.sent_files:
                url = absolute(reverse("toolcalling:attachment-content", kwargs={"pk": file.pk}))
                parts.append({"type": "file", "mediaType": file.content_type, "filename": file.name, "url": url})
            found.append({"id": str(message.pk), "role": "user", "parts": parts or [{"type": "text", "text": ""}]})
        elif message.role == Message.Role.ASSISTANT:
            if answer is None:
                answer = {"id": answer_id(asked), "role": "assistant", "parts": []}
                found.append(answer)
            steps = answer["parts"]
            steps.append({"type": "step-start"})
            if thought := reasoning_text(message.provider_items or []):
                steps.append({"type": "reasoning", "id": f"reasoning-{message.pk}", "text": thought, "state": "done"})
            if message.content:
                steps.append({"type": "text", "text": message.content, "state": "done"})
            steps.extend(tool_part(call, user) for call in message.tool_calls.all())
    for message_json in reversed(found):
        if message_json["role"] == "assistant":
            message_json["metadata"] = metadata
            break
    return found


class UIMessageStream:
    """Renders one response of a chat: ``start``, then per model call a step (its reasoning, text and tool parts,
    the calls' outputs and approval requests), then ``finish`` and ``[DONE]``.

    ``known``: the tool call ids (the model's) the client already shows, so their outputs attach to those
    parts; any other call is announced (``tool-input-*``) before its output. ``waiting``: calls to ask about
    again at the start (an answer the server did not take, such as the browser's answer to a staff call).
    ``user``: who reads the stream, for the previews of the calls they may decide (see ``decision_aid``).
    ``held``: the stream waits for a staff decision. It starts as the answer the page shows (its id, and its
    parts rebuilt from the database), says so (the conversation's status in the message's metadata, so the
    page knows at once that it is followed), then follows what the decision starts.
    ``names_answer``: the response to a new user message; its ``start`` waits for that message to be stored,
    to carry the answer's id (see ``answer_id``).
    """

    uses_database = True

    def __init__(
        self,
        conversation_id: Any,
        *,
        user: Any = None,
        known: Iterable[str] = (),
        waiting: Iterable[ToolCall] = (),
        held: bool = False,
        names_answer: bool = False,
    ) -> None:
        self.conversation_id = conversation_id
        self.user = user
        self.held = held
        self.started = not names_answer  # ``start`` is sent: at the opening, or once the user's message is stored
        self.known = set(known)
        self.inputs: set[str] = set()  # calls whose arguments streamed (``tool-input-start`` sent, not yet available)
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
        if self.held:
            return self.rebuilt()
        if not self.started:
            return ""
        return chunk("start") + "".join(self.approval_request(call) for call in self.waiting)

    def render(self, event: Event) -> str:
        handler = getattr(self, f"on_{event.type}", None)
        return handler(event.data) if handler is not None else ""

    def closing(self) -> str:
        out, self.error = self.begin() + self.end_text() + self.error + self.end_step(), ""
        if self.status is None:  # the stream ended before a turn did (an idle wait for staff, say): as it is now
            self.status = Conversation.objects.filter(pk=self.conversation_id).values_list("status", flat=True).first()
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
        if data["role"] == Message.Role.USER and not self.started:
            self.started = True
            return chunk("start", messageId=f"answer-{data['id']}")  # as ``answer_id`` names it
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
            # A client tool's call is only started here: its arguments are "available" (which runs the page's
            # onToolCall) once validated and waiting for the client (``on_tool_call``), never before.
            out += self.start_input(call) if call.name in self.client_names else self.announce(call)
        self.answered = True
        if not calls:
            out += self.end_step()
        return out

    def on_tool_input_delta(self, data: dict[str, Any]) -> str:
        # The arguments as the model writes them: the part is "input-streaming" until the answer is stored.
        call_id = data["call_id"]
        if call_id in self.known:
            return ""
        out = self.begin_step()
        if call_id not in self.inputs:
            self.inputs.add(call_id)
            out += self.end_text()
            out += chunk("tool-input-start", toolCallId=call_id, toolName=data["name"],
                         title=str(tool_label(data["name"])))  # fmt: skip
        return out + chunk("tool-input-delta", toolCallId=call_id, inputTextDelta=data["delta"])

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
        if call.call_id in self.inputs:  # started as its arguments streamed
            return self.input_available(call)
        start = chunk("tool-input-start", toolCallId=call.call_id, toolName=call.name, title=str(tool_label(call.name)))
        return start + self.input_available(call)

    def start_input(self, call: ToolCall) -> str:
        """``tool-input-start`` of a call not announced yet (its arguments may have started it already)."""
        if call.call_id in self.known or call.call_id in self.inputs:
            return ""
        self.inputs.add(call.call_id)
        return chunk("tool-input-start", toolCallId=call.call_id, toolName=call.name, title=str(tool_label(call.name)))

    @cached_property
    def client_names(self) -> frozenset[str]:
        """The names of the conversation's client tools (read once per stream)."""
        return client_tool_names(self.conversation_id)

    def input_available(self, call: ToolCall) -> str:
        # The app's own id of the call, and who decides it once it is gated, beside the SDK's fields.
        meta = {"toolcalling": {"id": call.pk, "approver": call.approver if call.requires_approval else None}}
        return chunk("tool-input-available", toolCallId=call.call_id, toolName=call.name,
                     title=str(tool_label(call.name)), input=call_input(call), providerMetadata=meta)  # fmt: skip

    def approval_request(self, call: ToolCall) -> str:
        # approvalId is the call's id in the REST API (tool-calls/{id}/), so a client may decide it there too; the
        # descriptor (the part's ``approval.descriptor``) has what a person needs to decide: arguments, preview.
        # A client tool's call asks for no approval: its part stays "input-available" until the browser's output.
        if call.approver == ToolCall.Approver.CLIENT:
            return ""
        return chunk("tool-approval-request", approvalId=str(call.pk), toolCallId=call.call_id,
                     approvalDescriptor=decision_aid(call, self.user))  # fmt: skip

    def outcome(self, call: ToolCall) -> str:
        if call.name in self.client_names and call.call_id not in self.known and call.status in FAILED:
            # A client call refused before it waited (invalid arguments, a limit): an input error, which the
            # page's onToolCall never sees, rather than arguments to run.
            self.known.add(call.call_id)
            return chunk("tool-input-error", toolCallId=call.call_id, toolName=call.name, input=call_input(call),
                         errorText=call.error or call.result, title=str(tool_label(call.name)))  # fmt: skip
        out = self.announce(call)
        if call.status == ToolCall.Status.SUCCEEDED:
            return out + chunk("tool-output-available", toolCallId=call.call_id, output=tool_output(call.result))
        if call.status in DENIED:
            return out + chunk("tool-output-denied", toolCallId=call.call_id)
        if call.status in FAILED:
            return out + chunk("tool-output-error", toolCallId=call.call_id, errorText=call.error or call.result)
        return out

    def begin(self) -> str:
        """``start``, when it is not sent yet (a turn that ended before the user's message was stored)."""
        if self.started:
            return ""
        self.started = True
        return chunk("start")

    def rebuilt(self) -> str:
        """``start`` as the answer to the last user message, and that answer's parts as they are stored."""
        self.started = True
        messages = Message.objects.filter(conversation_id=self.conversation_id).order_by("id")
        question = messages.filter(role=Message.Role.USER).last()
        answers = messages.filter(role=Message.Role.ASSISTANT)
        if question is not None:
            answers = answers.filter(id__gt=question.pk)
        state = {"conversation": str(self.conversation_id), "status": Conversation.Status.AWAITING_APPROVAL.value}
        out = chunk("start", messageId=answer_id(question))
        for message in answers.prefetch_related("tool_calls"):
            out += self.on_message({"id": message.pk, "role": message.role})
            for call in message.tool_calls.all():
                if call.status == ToolCall.Status.AWAITING_APPROVAL:
                    out += self.approval_request(call)
                elif call.status != ToolCall.Status.APPROVED:
                    out += self.outcome(call)
        # A ``message-metadata`` chunk, not ``start``'s own: the SDK's chat is "streaming" from it on.
        return out + chunk("message-metadata", messageMetadata={"toolcalling": state})

    def begin_step(self) -> str:
        out = self.begin()
        if self.step_open and self.answered:
            out += self.end_step()
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
