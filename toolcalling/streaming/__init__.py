"""Streaming: each conversation's numbered event stream (in this process, or a Redis Stream shared by every
process) and its server-sent events form. It knows nothing of turns: the engine publishes, readers follow."""

from ._deltas import DeltaBuffer
from ._event import Backend, Event
from ._memory import MemoryBackend
from ._redis import RedisBackend
from ._sse import (
    MEDIA_TYPE,
    Follower,
    Renderer,
    SSERenderer,
    afollow,
    follow,
    format_event,
    resume_point,
    sse_response,
)
from ._store import (
    EventStore,
    aread,
    describe_call,
    describe_message,
    get_backend,
    get_store,
    last_seq,
    publish,
    read,
)

__all__ = [
    "MEDIA_TYPE",
    "Follower",
    "Backend",
    "DeltaBuffer",
    "Event",
    "EventStore",
    "MemoryBackend",
    "afollow",
    "aread",
    "RedisBackend",
    "Renderer",
    "SSERenderer",
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
