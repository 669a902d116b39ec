"""A turn driven from async code (``Assistant.arun``): the one loop of ``Turn.iter()``, advanced step by step.

The steps (claims, writes, tool runs) stay the sync code every other driver runs, each advanced in a thread of
the loop's executor (``sync_to_async(thread_sensitive=False)``: no step keeps a transaction or a lock across a
wait, so any thread may run the next, and a slow tool never queues other turns behind Django's one thread for
sync code). Only the wait for the model leaves the steps: the turn yields a ``ModelWait``, and this driver
awaits it on the event loop (``ModelAPI.asend``: the SDK's async client, streamed or not) and sends the reply
back in, or throws the error in, where the turn handles it as any other model error. So no thread is held
while the model answers.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.db import connections
from pydantic import BaseModel

from ._observers import Listener
from ._runner import TurnResult, conversation_for
from ._steps import ModelWait
from ._turn import Turn

if TYPE_CHECKING:
    from ..models import Conversation, Message
    from ..toolkit import AssistantLike


def advance(steps: Generator[Any, Any, None], value: Any, error: BaseException | None) -> tuple[bool, Any]:
    """Run the turn to its next yield: ``(True, None)`` once it is over (a ``StopIteration`` cannot cross into a
    coroutine)."""
    drop_broken_connections()
    try:
        item = steps.throw(error) if error is not None else steps.send(value)
    except StopIteration:
        return True, None
    finally:
        return_pooled_connections()
    return False, item


def drop_broken_connections() -> None:
    """An executor thread keeps its database connections from one step to the next, of whichever turn, as a
    worker pool does (the loop's threads are few, and a connection per step cost the database more than the
    step); one an error left unusable (the database restarted, say) is closed, and the step connects again."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None and connection.errors_occurred:
            if connection.is_usable():
                connection.errors_occurred = False
            else:
                connection.close()


def return_pooled_connections() -> None:
    """A connection of Django's connection pool (``OPTIONS["pool"]``) goes back to its pool after each step:
    the pool is sized for requests, and executor threads keeping one each would hold them all while their
    turns wait for the model (a pool of 4 and 30 turns at once: the fifth step waited for a connection until the
    pool's time-out, and its turn failed). A connection outside a pool stays with its thread, as above."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None and not connection.in_atomic_block and pooled(connection):
            connection.close()


def pooled(connection: Any) -> bool:
    return getattr(connection, "pool", None) is not None  # PostgreSQL's backend has one when configured


async def drive(turn: Turn, content: str | None, *, claimed: bool = False) -> list[Message]:
    """Run ``turn`` to its end from async code; the messages it added (errors as ``Turn.run`` raises them)."""
    turn.waits = True
    steps = turn.iter(content, claimed=claimed)
    step = sync_to_async(advance, thread_sensitive=False)
    value: Any = None
    error: BaseException | None = None
    while True:
        done, item = await step(steps, value, error)
        if done:
            return turn.new_messages
        value, error = None, None
        if isinstance(item, ModelWait):
            try:
                value = await turn.client.asend(item.request, on_delta=item.on_delta)
            except BaseException as exc:  # a cancelled wait too: the turn fails, stored, and it is raised on
                error = exc


async def arun_turn(
    assistant: AssistantLike,
    user: Any,
    content: str,
    conversation: Conversation | None = None,
    *,
    output_type: type[BaseModel] | None = None,
    listeners: list[Listener] | None = None,
) -> TurnResult:
    """``run_turn`` for async code: the same turn, with the wait for the model on the event loop."""

    def prepare() -> Turn:
        conv = conversation_for(assistant, user, conversation, save=False)
        return Turn(assistant, conv, user=user, listeners=listeners, output_type=output_type)

    turn = await sync_to_async(prepare)()
    messages = await drive(turn, content)
    return TurnResult(
        conversation=turn.conversation, messages=messages, output=turn.output_value, stopped=turn.view.stopped
    )
