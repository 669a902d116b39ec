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

import json
import logging
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..conf import toolcalling_settings

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
    "error",
    "turn_end",
)


@dataclass(frozen=True, kw_only=True)
class Event:
    """One event of a conversation: ``seq`` orders it within the conversation."""

    seq: int
    type: str
    data: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "type": self.type, **self.data}


class Backend(Protocol):
    def publish(self, conversation_id: str, type: str, data: dict[str, Any]) -> Event: ...

    def read(self, conversation_id: str, after: int, timeout: float) -> list[Event]: ...

    def last_seq(self, conversation_id: str) -> int: ...


class MemoryBackend:
    """Events kept in this process: a bounded deque per conversation and a condition to wake readers."""

    MAX_CONVERSATIONS = 2000  # least recently used conversations are forgotten beyond this

    def __init__(self, max_len: int) -> None:
        self.max_len = max_len
        self._streams: OrderedDict[str, tuple[int, deque[Event]]] = OrderedDict()
        self._changed = threading.Condition()

    def publish(self, conversation_id: str, type: str, data: dict[str, Any]) -> Event:
        with self._changed:
            last, kept = self._streams.pop(conversation_id, (0, deque(maxlen=self.max_len)))
            event = Event(seq=last + 1, type=type, data=data)
            kept.append(event)
            self._streams[conversation_id] = (event.seq, kept)
            while len(self._streams) > self.MAX_CONVERSATIONS:
                self._streams.popitem(last=False)
            self._changed.notify_all()
        return event

    def read(self, conversation_id: str, after: int, timeout: float) -> list[Event]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                last, kept = self._streams.get(conversation_id, (0, ()))
                if last > after:
                    return [e for e in kept if e.seq > after]
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._changed.wait(remaining)

    def last_seq(self, conversation_id: str) -> int:
        with self._changed:
            return self._streams.get(conversation_id, (0, ()))[0]


# Numbering and appending in one script, so concurrent publishers never add ids out of order.
_PUBLISH = """
local seq = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], seq .. '-0', 'type', ARGV[1], 'data', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return seq
"""


class RedisBackend:
    """A Redis Stream per conversation (entry id ``<seq>-0``) plus a counter key that numbers its events."""

    def __init__(self, url: str, max_len: int, ttl: int) -> None:
        import redis

        # No read timeout (redis-py's default is 5 s): XREAD BLOCK waits longer than that on purpose,
        # up to EVENTS_KEEPALIVE. A dead server still fails fast on connect.
        self.redis = redis.Redis.from_url(url, socket_timeout=None, socket_connect_timeout=2, health_check_interval=30)
        self.max_len = max_len
        self.ttl = ttl
        self._publish = self.redis.register_script(_PUBLISH)

    @staticmethod
    def _keys(conversation_id: str) -> tuple[str, str]:
        return f"toolcalling:events:{conversation_id}", f"toolcalling:events:{conversation_id}:seq"

    def publish(self, conversation_id: str, type: str, data: dict[str, Any]) -> Event:
        seq = self._publish(
            keys=list(self._keys(conversation_id)),
            args=[type, self.max_len, json.dumps(data, default=str), self.ttl],
        )
        return Event(seq=int(seq), type=type, data=data)

    def read(self, conversation_id: str, after: int, timeout: float) -> list[Event]:
        stream, _ = self._keys(conversation_id)
        # XREAD BLOCK 0 would block forever; a whole number of milliseconds, at least one.
        answer = self.redis.xread({stream: f"{after}-0"}, block=max(1, int(timeout * 1000)), count=500)
        events = []
        for _, entries in answer or []:
            for entry_id, fields in entries:
                seq = int(entry_id.split(b"-", 1)[0])
                events.append(Event(seq=seq, type=fields[b"type"].decode(), data=json.loads(fields[b"data"])))
        return events

    def last_seq(self, conversation_id: str) -> int:
        return int(self.redis.get(self._keys(conversation_id)[1]) or 0)


def _build_backend() -> Backend:
    s = toolcalling_settings
    if s.EVENTS_REDIS_URL:
        return RedisBackend(s.EVENTS_REDIS_URL, s.EVENTS_MAX_LEN, s.EVENTS_TTL)
    return MemoryBackend(s.EVENTS_MAX_LEN)


class EventStore:
    """The backend settings ask for, and how long to leave it alone after it could not be reached."""

    RETRY_AFTER = 5.0  # seconds to stop trying an unreachable store, so a turn is not slowed per event

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.unreachable_until = 0.0

    def publish(self, conversation_id: str, type: str, data: dict[str, Any]) -> Event | None:
        if time.monotonic() < self.unreachable_until:
            logger.warning("%s event of conversation %s not published: the event store is unreachable", type,
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
