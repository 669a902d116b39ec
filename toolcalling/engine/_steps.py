"""What the steps of a turn return: plain values that say what happened and how the turn goes on.

``Turn.iter()`` yields them in this order: an ``Answered`` per model answer, a ``CallsAnswered`` after the
calls of an answer that asked for some, and last one ``Ended``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hooks import ModelRequest
    from ..model_apis import DeltaCallback
    from ..models import Message, ToolCall


@dataclass(kw_only=True, eq=False)
class Answered:
    """The model answered (or a client asked for calls directly), and the answer is stored."""

    message: Message
    """The stored assistant message."""
    calls: list[ToolCall]
    """The calls it asks for; none for a final answer, which ends the turn."""
    decisions: dict[int, tuple[str, str]] = field(default_factory=dict)
    """Calls (by id) the consumer decided itself before the turn goes on: ``(status, result)``, not run."""
    held: bool = False
    """Set by a consumer that held the step for a while: the stop request is read again before calls run."""


@dataclass(kw_only=True, eq=False)
class CallsAnswered:
    """Every call of one answer was run and answered, or waits for a decision."""

    calls: list[ToolCall]
    ending: str | None
    """How the turn ends after them (``awaiting_approval``; ``idle`` when every call was return-direct;
    ``stopped``), or ``None``: the model is asked again."""


@dataclass(kw_only=True, eq=False)
class Ended:
    """The turn is over and its end is stored."""

    status: str
    """The conversation's status now."""
    stopped: bool
    """Whether its owner stopped it."""


Step = Answered | CallsAnswered | Ended


@dataclass(kw_only=True, eq=False)
class ModelWait:
    """Yielded only to an async driver (``Turn.arun``): send ``request`` to the model, then send the reply back
    into the turn (or throw the error into it). A sync turn sends it itself and never yields this."""

    request: ModelRequest
    on_delta: DeltaCallback | None
