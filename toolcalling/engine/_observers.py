"""The one fan-out of a turn: hooks, Django signals, the event stream and listeners, OpenTelemetry and logs.

The turn and the call path only say what happened (``observers.model_call(...)``, ``observers.answered(...)``);
this class tells everyone who listens, in a fixed order. No other module of the loop calls a hook, sends a
signal, publishes an event or opens a span.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .. import signals, streaming
from ..models import ToolCall
from ..toolkit import tool_label
from . import _telemetry as telemetry

if TYPE_CHECKING:
    from ..hooks import ModelRequest, TurnView
    from ..models import Message
    from ._replies import ModelReply

logger = logging.getLogger("toolcalling")

Listener = Callable[[str, dict[str, Any]], None]
Outcome = tuple[str, str, str]  # a tool run's (status, text for the model, error)


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

    def __init__(self, view: TurnView, hooks: Iterable[Any], listeners: Iterable[Listener] = ()) -> None:
        self.view = view
        self.hooks = list(hooks)
        self.listeners = list(listeners)
        self.sender = type(view.assistant)
        self.span: Any = None

    # Events -----------------------------------------------------------------------------------------

    def emit(self, type: str, data: dict[str, Any]) -> None:
        """Publish on the conversation's event stream, then tell this turn's listeners."""
        streaming.publish(self.view.conversation.pk, type, data)
        for listener in self.listeners:
            listener(type, data)

    def message_added(self, message: Message) -> None:
        self.view.messages.append(message)
        self.emit("message", describe_message(message))

    def delta(self, text: str) -> None:
        self.emit("delta", {"content": text})

    # The turn ---------------------------------------------------------------------------------------

    def turn_started(self) -> None:
        self.span = telemetry.start_turn(self.view)
        self._hooks("on_turn_start")

    def turn_failed(self, detail: str) -> None:
        self.emit("error", {"detail": detail})

    def turn_ended(self) -> None:
        """The turn's status is stored: ``on_turn_end`` hooks, ``turn_finished``, the ``turn_end`` event."""
        try:
            self._hooks("on_turn_end", self.view.messages, reverse=True)
            signals.turn_finished.send(self.sender, turn=self.view, messages=self.view.messages)
            self.emit("turn_end", {"status": self.view.conversation.status, "stopped": self.view.stopped})
        finally:
            telemetry.end_turn(self.span, self.view)

    def turn_abandoned(self, detail: str) -> None:
        """The turn lost its claim: no hook, signal or event speaks for it any more; its span ends."""
        logger.warning("turn of conversation %s abandoned: %s", self.view.conversation.pk, detail)
        telemetry.end(self.span, error=f"TurnInterrupted: {detail}")

    def output_retry(self, attempt: int, problem: str) -> None:
        self.emit("output_retry", {"attempt": attempt, "problem": problem})

    # Model calls ------------------------------------------------------------------------------------

    def model_call(self, request: ModelRequest, send: Callable[[ModelRequest], ModelReply]) -> ModelReply:
        """Around one model call: hooks may change ``request`` before ``send`` sends it, and see the reply after."""
        self._hooks("before_model_call", request)
        signals.model_call_started.send(self.sender, turn=self.view, request=request)
        started = time.monotonic()
        with telemetry.model_call(self.view, request, self.span) as span:
            reply = send(request)
            telemetry.record_reply(span, reply)
        self.view.model_calls += 1
        duration_ms = (time.monotonic() - started) * 1000
        logger.info(
            "model call %s: %d tool calls, %d tokens, %.0f ms",
            request.model,
            len(reply.tool_calls),
            reply.usage.total_tokens,
            duration_ms,
            extra={"conversation": str(self.view.conversation.pk)},
        )
        self._hooks("after_model_call", reply, reverse=True)
        signals.model_call_finished.send(self.sender, turn=self.view, reply=reply, duration_ms=duration_ms)
        return reply

    # Tool calls -------------------------------------------------------------------------------------

    @contextmanager
    def tool_span(self, call: ToolCall) -> Iterator[None]:
        """The span of one call, from its run to its stored answer."""
        span = telemetry.start_tool(self.view, call, self.span)
        try:
            yield
        finally:
            telemetry.end_tool(span, call)

    def run_tool(self, call: ToolCall, run: Callable[[], Outcome]) -> Outcome:
        """Around one tool run: a ``before_tool_call`` hook may answer instead of the tool; ``after_tool_call``
        hooks see the outcome (``call.status``, ``call.error``) and may replace the text the model reads."""
        signals.tool_call_started.send(self.sender, turn=self.view, tool_call=call)
        self.emit("tool_call_started", describe_call(call))
        for hook in self.hooks:
            replaced = hook.before_tool_call(self.view, call, call.arguments)
            if replaced is not None:
                return ToolCall.Status.SUCCEEDED, replaced, ""
        status, text, error = run()
        call.status, call.error = status, error
        for hook in reversed(self.hooks):
            changed = hook.after_tool_call(self.view, call, text)
            if changed is not None:
                text = changed
        return status, text, error

    def answered(self, call: ToolCall) -> None:
        """A call's outcome and its tool message are stored (the message was announced first)."""
        signals.tool_call_finished.send(self.sender, turn=self.view, tool_call=call)
        self.emit("tool_call_finished", describe_call(call))

    def call_waiting(self, call: ToolCall) -> None:
        """A call is stored awaiting a decision."""
        signals.approval_requested.send(ToolCall, tool_call=call)
        self.emit("tool_call", describe_call(call))

    def awaiting_approval(self, calls: list[ToolCall]) -> None:
        self.emit("awaiting_approval", {"tool_calls": [describe_call(c) for c in calls]})

    # Internals --------------------------------------------------------------------------------------

    def _hooks(self, step: str, *args: Any, reverse: bool = False) -> None:
        for hook in reversed(self.hooks) if reverse else self.hooks:
            getattr(hook, step)(self.view, *args)
