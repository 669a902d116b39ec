"""A conversation's event stream: what its turns did, numbered, kept briefly, readable from any process.

Every turn publishes its events here (through the engine's observers), so a turn run in the request, on a Celery
worker after a staff decision, or in the background reaches the same per-conversation stream. Each
event gets the next sequence number of its conversation; readers ask for the events after the last
number they saw, which is what makes a dropped connection lose nothing.

With ``TOOLCALLING["EVENTS_REDIS_URL"]`` (default: env ``REDIS_URL``) the stream is a Redis Stream per
conversation, shared by web and worker processes. Without it, events stay in this process, which
suits the development server and eager Celery.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..conf import toolcalling_settings
from ._event import Backend, Event
from ._memory import MemoryBackend
from ._redis import RedisBackend

logger = logging.getLogger("toolcalling")

# The types a turn publishes (see README "Streaming"); a call approved, rejected, cancelled or expired
# adds ``tool_call_decided``.
EVENT_TYPES = (
    "message",
    "delta",
    "tool_call",
    "tool_call_started",
    "tool_call_finished",
    "tool_call_decided",
    "awaiting_approval",
    "output_retry",
    "error",
    "turn_end",
)


def _build_backend() -> Backend:
    s = toolcalling_settings
    if s.EVENTS_REDIS_URL:
        return RedisBackend(s.EVENTS_REDIS_URL, s.EVENTS_MAX_LEN, s.EVENTS_TTL)
    return MemoryBackend(s.EVENTS_MAX_LEN, s.EVENTS_MAX_BYTES)


class EventStore:
    """The backend settings ask for, and how long to leave it alone after it could not be reached."""

    RETRY_AFTER = 5.0  # seconds to stop trying an unreachable store, so a turn is not slowed per event

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.unreachable_until = 0.0

    def publish(self, conversation_id: str, type: str, data: dict[str, Any]) -> Event | None:
        if time.monotonic() < self.unreachable_until:
            logger.warning("%s event of conversation %s not published: the event stream is unreachable", type,
                           conversation_id)  # fmt: skip
            return None
        try:
            return self.backend.publish(conversation_id, type, data)
        except Exception:
            self.unreachable_until = time.monotonic() + self.RETRY_AFTER
            logger.exception("could not publish the %s event of conversation %s", type, conversation_id)
            return None


def get_store() -> EventStore:
    """The event store of the current settings (built again when ``TOOLCALLING`` changes)."""
    return toolcalling_settings.derived("events", lambda: EventStore(_build_backend()))


def get_backend() -> Backend:
    return get_store().backend


def publish(conversation_id: Any, type: str, data: dict[str, Any]) -> Event | None:
    """Append an event to the conversation's stream; ``None`` if the stream could not be reached.

    The database stays the record of the conversation, so a stream outage must not fail the turn:
    each lost event is logged, and readers see the stored result when they reload the history.
    """
    return get_store().publish(str(conversation_id), type, data)


def read(conversation_id: Any, after: int, timeout: float) -> list[Event]:
    """The events after ``after``, waiting up to ``timeout`` seconds for the first one."""
    return get_backend().read(str(conversation_id), after, timeout)


async def aread(conversation_id: Any, after: int, timeout: float) -> list[Event]:
    """``read`` for an event loop: the wait holds no thread (ASGI servers)."""
    return await get_backend().aread(str(conversation_id), after, timeout)


def last_seq(conversation_id: Any) -> int:
    """The sequence number of the conversation's latest event (0 before the first)."""
    return get_backend().last_seq(str(conversation_id))


def describe_call(call: Any) -> dict[str, Any]:
    """A tool call as events name it: ids, name and status (and who decides a gated one), never arguments
    or results."""
    data = {"id": call.pk, "call_id": call.call_id, "name": call.name, "status": call.status}
    if getattr(call, "requires_approval", False):
        data["approver"] = call.approver  # so a chat page offers Confirm only on the user's own calls
    return data


def describe_message(message: Any) -> dict[str, Any]:
    """A stored message as a ``message`` event: its id and text, and its calls by name (never arguments).

    A tool message's text is the tool's result for the model; it is left to the history endpoint.
    """
    data: dict[str, Any] = {"id": message.pk, "role": message.role}
    if message.role == "tool":
        data["tool_call_id"] = message.tool_call_id
        return data
    data["content"] = message.content
    if message.role == "assistant":
        data["tool_calls"] = [describe_call(c) for c in message.tool_calls.all()]
    return data
