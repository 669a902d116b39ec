"""A turn as AG-UI events (``RUN_STARTED``, ``TEXT_MESSAGE_*``, ``TOOL_CALL_*``, ``RUN_FINISHED`` or ``RUN_ERROR``),
each built with the ``ag-ui-protocol`` package's own types, and its ``RunAgentInput`` read with them too.

A run that ends with calls waiting for a decision finishes with an ``interrupt`` outcome: one interrupt per call
(its ``id`` is the call's id in the REST API, where it is decided: ``tool-calls/{id}/approve/``). A run sent with
``resume`` answers the user's own calls among them, as ``addToolApprovalResponse`` does for the AI SDK.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from django.urls import reverse
from rest_framework.exceptions import ValidationError

from .. import approval
from ..exceptions import AGUINotInstalled
from ..models import Conversation, Message, ToolCall
from ..streaming import Event
from ..toolkit import tool_label
from ._ai_sdk import reasoning_text
from ._decide import decision_aid
from ._requests import Answer

MEDIA_TYPE = "text/event-stream"
INTERRUPT_REASON = "tool_call_approval"


def core() -> Any:
    """``ag_ui.core``, or a 501 that says how to install it."""
    try:
        import ag_ui.core
    except ImportError as exc:
        raise AGUINotInstalled() from exc
    return ag_ui.core


def read_input(data: Any) -> Any:
    """The body as a ``RunAgentInput``; its problems as a 400 in DRF's shape."""
    from pydantic import ValidationError as Invalid

    try:
        run = core().RunAgentInput.model_validate(data)
    except Invalid as exc:
        raise ValidationError({"input": [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]})
    # Sent back in the run's events: an id no stream can carry (a lone surrogate) is refused before anything runs.
    problems = [f"{key}: {problem}" for key, value in (("threadId", run.thread_id), ("runId", run.run_id))
                if (problem := approval.text_problem(value))]  # fmt: skip
    # The frontend's tools are stored with the conversation and offered to the model: the same holds for them.
    for n, tool in enumerate(run.tools or ()):
        found = next((p for text in _strings(tool.model_dump(mode="python")) if (p := approval.text_problem(text))), "")
        if found:
            problems.append(f"tools.{n}: {found}")
    if problems:
        raise ValidationError({"input": problems})
    return run


def _strings(value: Any) -> Iterable[str]:
    """Every string in a JSON-like value, its keys too."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def answers(run: Any) -> list[Answer]:
    """The run's ``resume`` entries as approval answers: an interrupt's id is the call's; ``resolved`` with a
    payload ``{"approved": true}`` (or ``true``) confirms, anything else declines (``payload.reason`` is told)."""
    found = []
    for entry in run.resume or ():
        payload = entry.payload
        approved = payload is True or (isinstance(payload, dict) and payload.get("approved") is True)
        reason = payload.get("reason") if isinstance(payload, dict) else None
        found.append(Answer(approval_id=entry.interrupt_id, approved=entry.status == "resolved" and approved,
                            reason=reason if isinstance(reason, str) else ""))  # fmt: skip
    return found


def last_user_text(run: Any) -> str:
    """The text of the input's last message when it is the user's (text parts joined; other parts left out)."""
    if not run.messages or run.messages[-1].role != "user":
        return ""
    content = run.messages[-1].content
    if isinstance(content, str):
        return content
    return "\n\n".join(part.text for part in content if getattr(part, "type", None) == "text")


def interrupt(call: ToolCall, user: Any) -> dict[str, Any]:
    """A waiting call as an ``Interrupt``: its id is the call's; ``metadata`` has who decides it and what a person
    needs to (``arguments``, ``preview``, ``previewText``: see ``decision_aid``)."""
    return {"id": str(call.pk), "reason": INTERRUPT_REASON, "tool_call_id": call.call_id,
            "message": str(tool_label(call.name)), "metadata": decision_aid(call, user)}  # fmt: skip


def snapshot(messages: Iterable[Message], *, user: Any, absolute: Callable[[str], str]) -> Any:
    """Stored messages as a ``MESSAGES_SNAPSHOT`` event: user messages (text, and files as image or document
    parts by URL), a reasoning message before an answer that reasoned, assistant messages with their tool calls
    (arguments as the model sent them; ``metadata.toolcalling`` has the call's id and status, and for a waiting
    call what a person needs to decide it), and a tool message per answered call."""
    ag = core()
    found: list[Any] = []
    for message in messages:
        if message.role == Message.Role.USER:
            files = list(message.sent_files)
            content: Any = message.content
            if files:
                content = [ag.TextPart(text=message.content)] if message.content else []
                for file in files:
                    url = absolute(reverse("toolcalling:attachment-content", kwargs={"pk": file.pk}))
                    kind = ag.ImagePart if file.content_type.startswith("image/") else ag.DocumentPart
                    content.append(kind(source=ag.UrlSource(value=url, mime_type=file.content_type)))
            found.append(ag.UserMessage(id=str(message.pk), content=content))
        elif message.role == Message.Role.ASSISTANT:
            if thought := reasoning_text(message.provider_items or []):
                found.append(ag.ReasoningMessage(id=f"{message.pk}-reasoning", content=thought))
            calls = [
                ag.ToolCall(
                    id=call.call_id,
                    function=ag.FunctionCall(
                        name=call.name, arguments=call.raw_arguments or json.dumps(call.arguments)
                    ),
                    metadata={"toolcalling": call_state(call, user)},
                )
                for call in message.tool_calls.all()
            ]
            found.append(ag.AssistantMessage(id=str(message.pk), content=message.content or None,
                                             tool_calls=calls or None))  # fmt: skip
        elif message.role == Message.Role.TOOL:
            found.append(ag.ToolMessage(id=str(message.pk), content=message.content,
                                        tool_call_id=message.tool_call_id))  # fmt: skip
    return ag.MessagesSnapshotEvent(messages=found)


def call_state(call: ToolCall, user: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "id": call.pk,
        "status": call.status,
        "approver": call.approver if call.requires_approval else None,
    }
    if call.status == ToolCall.Status.AWAITING_APPROVAL and call.approver != ToolCall.Approver.CLIENT:
        state["interrupt"] = interrupt(call, user)
    return state


class AGUIStream:
    """Renders one run: the turn's events as AG-UI events, as ``data:`` lines of server-sent events."""

    uses_database = True

    def __init__(self, conversation_id: Any, *, thread_id: str, run_id: str, user: Any = None) -> None:
        self.ag = core()
        self.conversation_id = conversation_id
        self.user = user  # who reads the run, for the previews of the calls they may decide
        self.thread_id = thread_id
        self.run_id = run_id
        self.text_id: str | None = None
        self.inputs: set[str] = set()  # calls whose arguments streamed (TOOL_CALL_START and ARGS sent)
        self.texts = 0
        self.streamed = False
        self.ended = False
        self.error = ""  # RUN_ERROR, sent once the turn's failed end is stored (its ``turn_end``)

    def emit(self, name: str, **fields: Any) -> str:
        return self.emit_event(getattr(self.ag, name)(**fields))

    def emit_event(self, event: Any) -> str:
        return f"data: {event.model_dump_json(by_alias=True)}\n\n"

    # The Renderer interface --------------------------------------------------------------------------

    def opening(self, after: int) -> str:
        return self.emit("RunStartedEvent", thread_id=self.thread_id, run_id=self.run_id)

    def render(self, event: Event) -> str:
        handler = getattr(self, f"on_{event.type}", None)
        return handler(event.data) if handler is not None and not self.ended else ""

    def closing(self) -> str:
        if self.ended:
            return ""
        if self.error:  # the stream closed between the error and the turn's end
            self.ended = True
            return self.error
        status = Conversation.objects.filter(pk=self.conversation_id).values_list("status", flat=True).first()
        if status is None:  # deleted while the run went on: the turn lost its claim and published no end
            from ..exceptions import TurnInterrupted

            return self.end_text() + self.emit(
                "RunErrorEvent", message=str(TurnInterrupted.default_detail), code=TurnInterrupted.default_code
            )
        # Nothing moves any more without a decision (a resumed run whose other calls still wait): the run is over.
        return self.on_turn_end({"status": status})

    # Events ------------------------------------------------------------------------------------------

    def on_delta(self, data: dict[str, Any]) -> str:
        out = ""
        if self.text_id is None:
            self.texts += 1
            self.text_id = f"{self.run_id}-text-{self.texts}"
            out = self.emit("TextMessageStartEvent", message_id=self.text_id, role="assistant")
        self.streamed = True
        return out + self.emit("TextMessageContentEvent", message_id=self.text_id, delta=data["content"])

    def on_message(self, data: dict[str, Any]) -> str:
        if data["role"] != Message.Role.ASSISTANT:
            return ""
        message = Message.objects.filter(pk=data["id"]).first()
        if message is None:
            return ""
        out = ""
        if self.text_id is None and message.content and not self.streamed:
            self.texts += 1
            self.text_id = f"{self.run_id}-text-{self.texts}"
            out += self.emit("TextMessageStartEvent", message_id=self.text_id, role="assistant")
            out += self.emit("TextMessageContentEvent", message_id=self.text_id, delta=message.content)
        out += self.end_text()
        self.streamed = False
        for call in message.tool_calls.order_by("index"):
            if call.call_id not in self.inputs:  # else started, and its arguments sent, as they streamed
                out += self.emit("ToolCallStartEvent", tool_call_id=call.call_id, tool_call_name=call.name,
                                 parent_message_id=str(message.pk))  # fmt: skip
                arguments = call.raw_arguments or json.dumps(call.arguments)  # as the model sent them
                out += self.emit("ToolCallArgsEvent", tool_call_id=call.call_id, delta=arguments)
            out += self.emit("ToolCallEndEvent", tool_call_id=call.call_id)
        self.inputs.clear()
        return out

    def on_tool_input_delta(self, data: dict[str, Any]) -> str:
        # The arguments as the model writes them; the call ends (TOOL_CALL_END) once the answer is stored.
        out = ""
        if data["call_id"] not in self.inputs:
            self.inputs.add(data["call_id"])
            out = self.end_text() + self.emit("ToolCallStartEvent", tool_call_id=data["call_id"],
                                              tool_call_name=data["name"])  # fmt: skip
        return out + self.emit("ToolCallArgsEvent", tool_call_id=data["call_id"], delta=data["delta"])

    def on_tool_call_finished(self, data: dict[str, Any]) -> str:
        call = ToolCall.objects.filter(pk=data["id"], conversation_id=self.conversation_id).first()
        if call is None:
            return ""
        answer = Message.objects.filter(conversation_id=self.conversation_id, role=Message.Role.TOOL,
                                        tool_call_id=call.call_id).order_by("-id").first()  # fmt: skip
        message_id = str(answer.pk) if answer is not None else f"{self.run_id}-{call.call_id}"
        return self.emit(
            "ToolCallResultEvent", message_id=message_id, tool_call_id=call.call_id, content=call.result, role="tool"
        )

    def on_tool_call_decided(self, data: dict[str, Any]) -> str:
        # Declined, cancelled or expired: answered at once (an approved call's result comes once it has run).
        return "" if data.get("status") == ToolCall.Status.APPROVED else self.on_tool_call_finished(data)

    def on_error(self, data: dict[str, Any]) -> str:
        # Held until the turn's end: a client is done at RUN_ERROR, and must find the conversation failed then.
        self.error = self.emit("RunErrorEvent", message=data["detail"], code=data.get("code"))
        return self.end_text()

    def on_turn_end(self, data: dict[str, Any]) -> str:
        self.ended = True
        if self.error:  # the run failed: RUN_ERROR ends it, no RUN_FINISHED follows
            return self.error
        # A call of a frontend's tool is no interrupt: the client runs it and sends its result in a new run.
        waiting = (
            ToolCall.objects.filter(conversation_id=self.conversation_id, status=ToolCall.Status.AWAITING_APPROVAL)
            .exclude(approver=ToolCall.Approver.CLIENT)
            .order_by("id")
        )
        outcome: Any = {"type": "success"}
        if data["status"] == "awaiting_approval" and waiting:
            interrupts = [interrupt(c, self.user) for c in waiting]
            outcome = {"type": "interrupt", "interrupts": interrupts}
        return self.end_text() + self.emit(
            "RunFinishedEvent", thread_id=self.thread_id, run_id=self.run_id, outcome=outcome
        )

    def end_text(self) -> str:
        if self.text_id is None:
            return ""
        text_id, self.text_id = self.text_id, None
        return self.emit("TextMessageEndEvent", message_id=text_id)
