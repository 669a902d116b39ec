"""Hooks around the loop: subclass ``Hook`` and override the steps you need; all are optional."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import ModelReply
    from .loop import Turn
    from .models import Message, ToolCall


class EndTurn(Exception):  # noqa: N818 - it steers the loop, it is not an error
    """Raise from a hook to end the turn now; ``message`` becomes the assistant's reply."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(kw_only=True)
class ModelRequest:
    """What is about to be sent to the model; hooks may change ``messages``, ``tools`` and ``options``."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    options: dict[str, Any] = field(default_factory=dict)


class Hook:
    """Called in this order for a turn: ``on_turn_start``; per model call ``before_model_call`` and
    ``after_model_call``; per tool call ``before_tool_call`` and ``after_tool_call``; ``on_turn_end``.
    Hooks run in the order they are listed (settings ``HOOKS`` first, then the assistant's ``hooks``);
    the ``after_*`` steps run in reverse order, like middleware."""

    def on_turn_start(self, turn: Turn) -> None:
        """A turn begins (a user message, or a continuation after approvals)."""

    def before_model_call(self, turn: Turn, request: ModelRequest) -> None:
        """Change the request in place, or raise ``EndTurn``."""

    def after_model_call(self, turn: Turn, reply: ModelReply) -> None:
        """See the model's answer before its calls run; may edit ``reply`` or raise ``EndTurn``."""

    def before_tool_call(self, turn: Turn, call: ToolCall, arguments: dict[str, Any]) -> str | None:
        """Return a string to skip the tool and use it as the result; ``None`` runs the tool."""
        return None

    def after_tool_call(self, turn: Turn, call: ToolCall, result: str) -> str | None:
        """Return a string to replace the result the model reads; ``None`` keeps it."""
        return None

    def on_turn_end(self, turn: Turn, messages: list[Message]) -> None:
        """The turn ended; ``turn.conversation.status`` says how."""
