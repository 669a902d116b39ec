"""Streaming: each conversation's numbered event stream (in this process, or a Redis Stream shared by every
process) and its server-sent events form. It knows nothing of turns: the engine publishes, readers follow."""

from ._deltas import DeltaBuffer
from ._event import Event
from ._sse import MEDIA_TYPE, Follower, Renderer, follow, resume_point, sse_response
from ._store import aread, describe_call, describe_message, get_backend, get_store, last_seq, publish, read

__all__ = [
    "MEDIA_TYPE",
    "Follower",
    "DeltaBuffer",
    "Event",
    "aread",
    "Renderer",
    "describe_call",
    "describe_message",
    "follow",
    "get_backend",
    "get_store",
    "last_seq",
    "publish",
    "read",
    "resume_point",
    "sse_response",
]
