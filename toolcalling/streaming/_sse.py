"""Server-sent events: formatting events as ``text/event-stream`` and the stream of one conversation."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse

from ..conf import toolcalling_settings
from . import _store as events

logger = logging.getLogger("toolcalling")

MEDIA_TYPE = "text/event-stream"
RETRY_MS = 2000  # how soon a browser's EventSource reconnects


def format_event(event: events.Event) -> str:
    """One SSE event: ``id`` is the conversation's sequence number, ``event`` its type, ``data`` JSON."""
    data = json.dumps(event.as_json(), separators=(",", ":"), default=str)
    return f"id: {event.seq}\nevent: {event.type}\ndata: {data}\n\n"


def format_start(after: int) -> str:
    """The opening lines: the reconnect delay, and an ``id`` without data.

    An ``id`` field alone sets the reader's last event id without dispatching anything, so a reader
    that reconnects before any event arrived still resumes from where this stream began.
    """
    return f"retry: {RETRY_MS}\nid: {after}\n\n"


KEEPALIVE = ": keepalive\n\n"


def resume_point(conversation_id: Any, requested: int | None) -> int:
    """Where a reader starts: after ``requested``, or after the latest event when it asked for nothing.

    A number beyond the stream's end means the stream was reset (events kept in memory and the
    process restarted, or Redis keys expired): the reader then gets whatever the stream holds now.
    """
    last = events.last_seq(conversation_id)
    if requested is None:
        return last
    return requested if requested <= last else 0


def follow(
    conversation_id: Any,
    after: int,
    *,
    until: Callable[[events.Event], bool] | None = None,
    idle_timeout: float | None = None,
    finished: Callable[[], bool] | None = None,
) -> Iterator[str]:
    """Yield the conversation's events after ``after`` as SSE text, with keepalive comments.

    Ends after an event for which ``until`` is true; after ``idle_timeout`` seconds without an event;
    or when ``finished()`` turns true and no event is left to read (the producer is gone).
    """
    s = toolcalling_settings
    idle_timeout = s.EVENTS_IDLE_TIMEOUT if idle_timeout is None else idle_timeout
    keepalive = s.EVENTS_KEEPALIVE
    yield format_start(after)
    last_event_at = last_write_at = time.monotonic()
    while True:
        done_before_read = finished() if finished is not None else False
        wait = min(keepalive, max(0.0, idle_timeout - (time.monotonic() - last_event_at)))
        if finished is not None:
            wait = min(wait, 0.5)  # look at the producer often, so a lost event cannot stall the stream
        try:
            batch = events.read(conversation_id, after, wait)
        except Exception:
            # The stream's store went away (Redis restarting, say). End this response; the reader
            # reconnects with its last event id and misses nothing that was kept.
            logger.warning("reading the events of conversation %s failed", conversation_id, exc_info=True)
            return
        for event in batch:
            after = event.seq
            yield format_event(event)
            if until is not None and until(event):
                return
        now = time.monotonic()
        if batch:
            last_event_at = last_write_at = now
            continue
        if done_before_read or now - last_event_at >= idle_timeout:
            return
        if now - last_write_at >= keepalive:
            # Proxies and browsers drop connections that stay silent; a comment keeps this one open.
            last_write_at = now
            yield KEEPALIVE


async def aiterate(iterator: Iterator[str]) -> AsyncIterator[str]:
    """Serve a blocking iterator to an ASGI server, each step in a worker thread, closing it on disconnect."""
    step = sync_to_async(next, thread_sensitive=False)
    done = object()
    try:
        while True:
            item = await step(iterator, done)
            if item is done:
                return
            yield item
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            await sync_to_async(close, thread_sensitive=False)()


def sse_response(iterator: Iterator[str], *, asgi: bool) -> StreamingHttpResponse:
    """An unbuffered ``text/event-stream`` response; ASGI servers get an async iterator."""
    content: Iterator[str] | AsyncIterator[str] = aiterate(iterator) if asgi else iterator
    resp = StreamingHttpResponse(content, content_type=f"{MEDIA_TYPE}; charset=utf-8")
    resp["Cache-Control"] = "no-cache"
    resp["X-Accel-Buffering"] = "no"  # nginx would otherwise hold the stream back
    return resp
