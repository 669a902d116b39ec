"""Server-sent events: formatting events as ``text/event-stream`` and the stream of one conversation."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol, TypeVar

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse

from ..conf import toolcalling_settings
from . import _store as events
from ._event import Backend

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

T = TypeVar("T")


class Renderer(Protocol):
    """What a follower writes: the opening, each event (possibly nothing), and the closing. Another wire format
    (a frontend protocol, say) is another renderer over the same events."""

    uses_database: bool  # its methods read the database, so an event loop calls them from a thread

    def opening(self, after: int) -> str: ...

    def render(self, event: events.Event) -> str: ...

    def closing(self) -> str: ...


class SSERenderer:
    """The app's own server-sent events (see ``format_event``)."""

    uses_database = False

    def opening(self, after: int) -> str:
        return format_start(after)

    def render(self, event: events.Event) -> str:
        return format_event(event)

    def closing(self) -> str:
        return ""


def resume_point(conversation_id: Any, requested: int | None) -> int:
    """Where a reader starts: after ``requested``, or after the latest event when it asked for nothing.

    A number beyond the stream's end means the stream was reset (events kept in memory and the
    process restarted, or Redis keys expired): the reader then gets whatever the stream holds now.
    """
    last = events.last_seq(conversation_id)
    if requested is None:
        return last
    return requested if requested <= last else 0


class Follower:
    """One reader of a conversation's stream: what to wait for next, and what to write for what it read.

    The stream ends after an event for which ``until`` is true; after ``idle_timeout`` seconds without an
    event; or when ``finished()`` turns true and no event is left to read (the producer is gone). Quiet
    stretches get a keepalive comment every ``EVENTS_KEEPALIVE`` seconds.
    """

    def __init__(
        self,
        after: int,
        *,
        until: Callable[[events.Event], bool] | None = None,
        idle_timeout: float | None = None,
        finished: Callable[[], bool] | None = None,
        renderer: Renderer | None = None,
    ) -> None:
        s = toolcalling_settings
        self.after = after
        self.renderer: Renderer = renderer or SSERenderer()
        self.until = until
        self.idle_timeout = s.EVENTS_IDLE_TIMEOUT if idle_timeout is None else idle_timeout
        self.keepalive = s.EVENTS_KEEPALIVE
        self.finished = finished
        self.last_event_at = self.last_write_at = time.monotonic()
        self.done_before_read = False

    def wait(self) -> float:
        """How long the next read may wait."""
        self.done_before_read = self.finished() if self.finished is not None else False
        wait = min(self.keepalive, max(0.0, self.idle_timeout - (time.monotonic() - self.last_event_at)))
        if self.finished is not None:
            wait = min(wait, 0.5)  # look at the producer often, so a lost event cannot stall the stream
        return wait

    def took(self, batch: list[events.Event]) -> tuple[list[str], bool]:
        """The text to write for what a read returned, and whether the stream is over."""
        lines = []
        for event in batch:
            self.after = event.seq
            text = self.renderer.render(event)
            if text:
                lines.append(text)
            if self.until is not None and self.until(event):
                return lines, True
        now = time.monotonic()
        if batch:
            self.last_event_at = self.last_write_at = now
            return lines, False
        if self.done_before_read or now - self.last_event_at >= self.idle_timeout:
            return lines, True
        if now - self.last_write_at >= self.keepalive:
            # Proxies and browsers drop connections that stay silent; a comment keeps this one open.
            self.last_write_at = now
            lines.append(KEEPALIVE)
        return lines, False


def follow(conversation_id: Any, follower: Follower, backend: Backend | None = None) -> Iterator[str]:
    """The conversation's events as SSE text, read by a thread (WSGI servers); from ``backend`` when given
    (a streamed turn's, see ``EventStore.for_stream``), else from where the store keeps them."""
    yield follower.renderer.opening(follower.after)
    while True:
        try:
            if backend is not None:
                batch = backend.read(str(conversation_id), follower.after, follower.wait())
            else:
                batch = events.read(conversation_id, follower.after, follower.wait())
        except Exception:
            _read_failed(conversation_id)
            break
        lines, done = follower.took(batch)
        yield from lines
        if done:
            break
    if closing := follower.renderer.closing():
        yield closing


async def afollow(conversation_id: Any, follower: Follower, backend: Backend | None = None) -> AsyncIterator[str]:
    """The same, awaited on the event loop (ASGI servers): an idle reader holds no thread (a renderer or a
    ``finished`` that reads the database is called from one, as Django calls the ORM from async code)."""
    blocking = follower.renderer.uses_database

    async def call(function: Callable[..., T], *args: Any) -> T:
        return await sync_to_async(function)(*args) if blocking else function(*args)

    yield await call(follower.renderer.opening, follower.after)
    while True:
        try:
            wait = await call(follower.wait)
            if backend is not None:
                batch = await backend.aread(str(conversation_id), follower.after, wait)
            else:
                batch = await events.aread(conversation_id, follower.after, wait)
        except Exception:
            _read_failed(conversation_id)
            break
        lines, done = await call(follower.took, batch)
        for line in lines:
            yield line
        if done:
            break
    if closing := await call(follower.renderer.closing):
        yield closing


def _read_failed(conversation_id: Any) -> None:
    # The stream's store went away (Redis restarting, say). End this response; the reader reconnects with
    # its last event id and misses nothing that was kept.
    logger.warning("reading the events of conversation %s failed", conversation_id, exc_info=True)


def sse_response(
    conversation_id: Any, follower: Follower, *, asgi: bool, backend: Backend | None = None
) -> StreamingHttpResponse:
    """An unbuffered ``text/event-stream`` response; ASGI servers get an async iterator."""
    content = afollow(conversation_id, follower, backend) if asgi else follow(conversation_id, follower, backend)
    resp = StreamingHttpResponse(content, content_type=f"{MEDIA_TYPE}; charset=utf-8")
    resp["Cache-Control"] = "no-cache"
    resp["X-Accel-Buffering"] = "no"  # nginx would otherwise hold the stream back
    return resp
