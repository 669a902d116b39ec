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
import threading
import time
from typing import Any

from ..conf import toolcalling_settings
from ..exceptions import EventsUnavailable
from ._event import Backend, Event
from ._memory import MemoryBackend
from ._redis import RedisBackend

logger = logging.getLogger("toolcalling")


def _build_store() -> EventStore:
    s = toolcalling_settings
    memory = MemoryBackend(s.EVENTS_MAX_LEN, s.EVENTS_MAX_BYTES)
    if s.EVENTS_REDIS_URL:
        return EventStore(RedisBackend(s.EVENTS_REDIS_URL, s.EVENTS_MAX_LEN, s.EVENTS_TTL), fallback=memory)
    return EventStore(memory)


class EventStore:
    """The backend settings ask for, how long to leave it alone after it could not be reached, and the
    in-process store a streamed turn falls back to while it cannot be reached."""

    RETRY_AFTER = 5.0  # seconds to stop trying an unreachable store, so a turn is not slowed per event

    def __init__(self, backend: Backend, fallback: Backend | None = None) -> None:
        self.backend = backend
        self.fallback = fallback
        self.unreachable_until = 0.0
        # Conversations whose streamed turn follows the fallback in this process (see ``for_stream``).
        self.local: set[str] = set()
        self._lock = threading.Lock()

    def publish(self, conversation_id: str, type: str, data: dict[str, Any]) -> Event | None:
        if self.fallback is not None and conversation_id in self.local:
            return self.fallback.publish(conversation_id, type, data)
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

    def last_seq(self, conversation_id: str) -> int:
        """The latest event's number; ``EventsUnavailable`` when the store cannot be reached."""
        if self.fallback is not None and conversation_id in self.local:
            return self.fallback.last_seq(conversation_id)
        if time.monotonic() < self.unreachable_until:
            raise EventsUnavailable()
        try:
            return self.backend.last_seq(conversation_id)
        except Exception as exc:
            self.unreachable_until = time.monotonic() + self.RETRY_AFTER
            logger.warning("the event stream of conversation %s is unreachable: %s", conversation_id, exc)
            raise EventsUnavailable() from exc

    def for_stream(self, conversation_id: str) -> tuple[Backend, int]:
        """Where a streamed turn's response reads its events, and the number to read after. While the store
        cannot be reached the turn streams from this process: its events go to the in-process fallback until
        ``release()``, and readers elsewhere miss them (the history still has everything)."""
        try:
            return self.backend, self.last_seq(conversation_id)
        except EventsUnavailable:
            if self.fallback is None:
                raise
        with self._lock:
            self.local.add(conversation_id)
        logger.warning("conversation %s streams from this process: its event stream is unreachable", conversation_id)
        return self.fallback, self.fallback.last_seq(conversation_id)

    def backend_for(self, conversation_id: str) -> Backend:
        """The backend that holds the conversation's events now."""
        if self.fallback is not None and conversation_id in self.local:
            return self.fallback
        return self.backend

    def release(self, conversation_id: str) -> None:
        """The streamed turn is over: the conversation's next events go to the store again."""
        with self._lock:
            self.local.discard(conversation_id)


def get_store() -> EventStore:
    """The event store of the current settings (built again when ``TOOLCALLING`` changes)."""
    return toolcalling_settings.derived("events", _build_store)


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
    return get_store().backend_for(str(conversation_id)).read(str(conversation_id), after, timeout)


async def aread(conversation_id: Any, after: int, timeout: float) -> list[Event]:
    """``read`` for an event loop: the wait holds no thread (ASGI servers)."""
    return await get_store().backend_for(str(conversation_id)).aread(str(conversation_id), after, timeout)


def last_seq(conversation_id: Any) -> int:
    """The sequence number of the conversation's latest event (0 before the first); ``EventsUnavailable``
    (503) when the store cannot be reached."""
    return get_store().last_seq(str(conversation_id))


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
