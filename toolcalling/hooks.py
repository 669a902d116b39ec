"""Hooks around the loop: subclass ``Hook`` and override the steps you need; all are optional.

Hooks, and the receivers of the loop's signals, are given a ``TurnView``: what a turn is about
(assistant, conversation, user, context) and how far it got, never the machinery that runs it.
``ModelRequest`` (what a hook may change before it goes out) lives with ``ModelReply`` in the model APIs and is
named here too, where hooks have always found it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .model_apis import ModelRequest

__all__ = ["EndTurn", "Hook", "ModelRequest", "TurnView"]

if TYPE_CHECKING:
    from .model_apis import ModelReply
    from .models import Conversation, Message, ToolCall
    from .toolkit import AssistantLike, ToolContext


class EndTurn(Exception):  # noqa: N818 - it steers the loop, it is not an error
    """Raise from a hook to end the turn now; ``message`` becomes the assistant's reply."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(kw_only=True, eq=False)
class TurnView:
    """What hooks and signal receivers see of a turn. Read it; the loop owns it."""

    assistant: AssistantLike
    """The assistant instance running the turn."""
    conversation: Conversation
    """The stored conversation (its ``status`` says how a finished turn ended)."""
    user: Any
    """The user the turn acts for: the conversation's owner."""
    context: ToolContext
    """The ``ToolContext`` the turn's tools receive."""
    messages: list[Message] = field(default_factory=list)
    """The messages this turn stored so far, in order."""
    model_calls: int = 0
    """How often the model was asked in this turn so far."""
    stream: bool = False
    """Whether the model's answers are streamed (``delta`` events)."""
    stopped: bool = False
    """Whether the turn ended because its owner stopped it (``POST conversations/{id}/stop/``)."""


class Hook:
    """Called in this order for a turn: ``on_turn_start``; per model call ``before_model_call`` and
    ``after_model_call``; per tool call ``before_tool_call`` and ``after_tool_call``; ``on_turn_end``.
    Hooks run in the order they are listed (settings ``HOOKS`` first, then the assistant's ``hooks``);
    the ``after_*`` steps run in reverse order, like middleware."""

    def on_turn_start(self, turn: TurnView) -> None:
        """A turn begins (a user message, or a continuation after approvals)."""

    def before_model_call(self, turn: TurnView, request: ModelRequest) -> None:
        """Change the request in place, or raise ``EndTurn``."""

    def after_model_call(self, turn: TurnView, reply: ModelReply) -> None:
        """See the model's answer before its calls run; may edit ``reply`` or raise ``EndTurn``."""

    def before_tool_call(self, turn: TurnView, call: ToolCall, arguments: dict[str, Any]) -> str | None:
        """Return a string to skip the tool and use it as the result; ``None`` runs the tool."""
        return None

    def after_tool_call(self, turn: TurnView, call: ToolCall, result: str) -> str | None:
        """Return a string to replace the result the model reads; ``None`` keeps it."""
        return None

    def on_turn_end(self, turn: TurnView, messages: list[Message]) -> None:
        """The turn ended; ``turn.conversation.status`` says how."""
