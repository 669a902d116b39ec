"""The one fan-out of a turn: Django signals, the event stream and listeners, OpenTelemetry and logs.

The turn and the call path say what happened (``observers.answered(call)``) and this class tells everyone
who listens, in a fixed order. Observers only observe: they decide nothing and change nothing of the turn
(hooks, which may, are called by the turn and the call path themselves). No other module of the loop sends
a signal, publishes an event or opens a span.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .. import signals, streaming
from ..model_apis import StreamCallbacks
from ..models import ToolCall
from ..toolkit import tool_label
from . import _telemetry as telemetry

if TYPE_CHECKING:
    from ..hooks import ModelRequest, TurnView
    from ..model_apis import ModelReply
    from ..models import Message

logger = logging.getLogger("toolcalling")

Listener = Callable[[str, dict[str, Any]], None]


def describe_call(call: ToolCall) -> dict[str, Any]:
    """A tool call as events name it, with the ``label`` end users see instead of its name."""
    return {**streaming.describe_call(call), "label": tool_label(call.name)}


def describe_message(message: Message) -> dict[str, Any]:
    """A stored message as a ``message`` event; its calls carry their labels too."""
    data = streaming.describe_message(message)
    for call in data.get("tool_calls", ()):
        call["label"] = tool_label(call["name"])
    return data


class Observers:
    """Everyone who hears of one turn (or of one approved call run on a worker)."""

    def __init__(self, view: TurnView, listeners: Iterable[Listener] = ()) -> None:
        self.view = view
        self.listeners = list(listeners)
        self.sender = type(view.assistant)
        self.span: Any = None
        self.deltas = streaming.DeltaBuffer(lambda text: self._emit("delta", {"content": text}))
        # A tool call's arguments as the model writes them, gathered as text is: one buffer, for the call written now.
        self.input_call: tuple[str, str] | None = None
        self.inputs = streaming.DeltaBuffer(self._emit_input)

    # Events -----------------------------------------------------------------------------------------

    def emit(self, type: str, data: dict[str, Any]) -> None:
        """Publish on the conversation's event stream, then tell this turn's listeners (text gathered for a
        ``delta`` or a ``tool_input_delta`` goes out first, so events keep their order)."""
        self.deltas.flush()
        self.inputs.flush()
        self._emit(type, data)

    def _emit(self, type: str, data: dict[str, Any]) -> None:
        streaming.publish(self.view.conversation.pk, type, data)
        for listener in self.listeners:
            listener(type, data)

    def message_added(self, message: Message) -> None:
        self.view.messages.append(message)
        self.emit("message", describe_message(message))

    def delta(self, text: str) -> None:
        """A piece of the model's text; pieces that come fast go out together (``streaming.DeltaBuffer``)."""
        self.inputs.flush()
        self.deltas.add(text)

    def tool_input(self, call_id: str, name: str, piece: str) -> None:
        """A piece of a call's arguments as the model writes them (``tool_input_delta``): shown, never run."""
        self.deltas.flush()
        if self.input_call != (call_id, name):
            self.inputs.flush()
            self.input_call = (call_id, name)
        self.inputs.add(piece)

    def _emit_input(self, piece: str) -> None:
        if self.input_call is not None:
            call_id, name = self.input_call
            self._emit("tool_input_delta", {"call_id": call_id, "name": name, "delta": piece})

    def streamed(self) -> StreamCallbacks:
        """What a streamed model call reports to: text pieces and argument pieces."""
        return StreamCallbacks(text=self.delta, tool_input=self.tool_input)

    # The turn ---------------------------------------------------------------------------------------

    def turn_started(self) -> None:
        self.span = telemetry.start_turn(self.view)

    def turn_failed(self, detail: str, code: str) -> None:
        self.emit("error", {"detail": detail, "code": code})

    def turn_ended(self) -> None:
        """The turn's status is stored (and its ``on_turn_end`` hooks ran): ``turn_finished``, ``turn_end``."""
        signals.turn_finished.send(self.sender, turn=self.view, messages=self.view.messages)
        self.emit("turn_end", {"status": self.view.conversation.status, "stopped": self.view.stopped})

    def turn_closed(self) -> None:
        """The turn is over, however it ended: its span ends."""
        telemetry.end_turn(self.span, self.view)

    def turn_abandoned(self, detail: str) -> None:
        """The turn lost its claim: no hook, signal or event speaks for it any more; its span ends."""
        logger.warning("turn of conversation %s abandoned: %s", self.view.conversation.pk, detail)
        telemetry.end(self.span, error=f"TurnInterrupted: {detail}")

    def output_retry(self, attempt: int, problem: str) -> None:
        self.emit("output_retry", {"attempt": attempt, "problem": problem})

    # Model calls ------------------------------------------------------------------------------------

    @contextmanager
    def model_call(self, request: ModelRequest) -> Iterator[Callable[[ModelReply], None]]:
        """Around one model call, which the turn makes inside: it reports the reply through the function given."""
        signals.model_call_started.send(self.sender, turn=self.view, request=request)
        started = time.monotonic()
        replies: list[ModelReply] = []
        with telemetry.model_call(self.view, request, self.span) as span:
            yield replies.append
            telemetry.record_reply(span, replies[-1])
        reply = replies[-1]
        duration_ms = (time.monotonic() - started) * 1000
        logger.info(
            "model call %s: %d tool calls, %d tokens, %.0f ms",
            request.model,
            len(reply.tool_calls),
            reply.usage.total_tokens,
            duration_ms,
            extra={"conversation": str(self.view.conversation.pk)},
        )
        signals.model_call_finished.send(self.sender, turn=self.view, reply=reply, duration_ms=duration_ms)

    # Tool calls -------------------------------------------------------------------------------------

    @contextmanager
    def tool_span(self, call: ToolCall) -> Iterator[None]:
        """The span of one call, from its run to its stored answer."""
        span = telemetry.start_tool(self.view, call, self.span)
        try:
            yield
        finally:
            telemetry.end_tool(span, call)

    def tool_started(self, call: ToolCall) -> None:
        """A call is about to run (its ``before_tool_call`` hooks come next)."""
        signals.tool_call_started.send(self.sender, turn=self.view, tool_call=call)
        self.emit("tool_call_started", describe_call(call))

    def answered(self, call: ToolCall) -> None:
        """A call's outcome and its tool message are stored (the message was announced first)."""
        signals.tool_call_finished.send(self.sender, turn=self.view, tool_call=call)
        self.emit("tool_call_finished", describe_call(call))

    def outcome_unknown(self, call: ToolCall) -> None:
        """A call whose tool may have run in a process that died now waits for a person to say what happened."""
        signals.tool_call_outcome_unknown.send(ToolCall, tool_call=call)

    def call_waiting(self, call: ToolCall) -> None:
        """A call is stored awaiting a decision."""
        signals.approval_requested.send(ToolCall, tool_call=call)
        self.emit("tool_call", describe_call(call))

    def awaiting_approval(self, calls: list[ToolCall]) -> None:
        self.emit("awaiting_approval", {"tool_calls": [describe_call(c) for c in calls]})
