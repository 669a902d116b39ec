"""Streaming: each conversation's numbered event stream (in this process, or a Redis Stream shared by every
process) and its server-sent events form. It knows nothing of turns: the engine publishes, readers follow."""

from ._sse import MEDIA_TYPE, follow, format_event, resume_point, sse_response
from ._store import (
    EVENT_TYPES,
    Backend,
    Event,
    EventStore,
    MemoryBackend,
    RedisBackend,
    describe_call,
    describe_message,
    get_backend,
    get_store,
    last_seq,
    publish,
    read,
)

__all__ = [
    "EVENT_TYPES",
    "MEDIA_TYPE",
    "Backend",
    "Event",
    "EventStore",
    "MemoryBackend",
    "RedisBackend",
    "describe_call",
    "describe_message",
    "follow",
    "format_event",
    "get_backend",
    "get_store",
    "last_seq",
    "publish",
    "read",
    "resume_point",
    "sse_response",
]
