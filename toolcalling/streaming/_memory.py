"""Events kept in this process: for the development server and eager Celery, bounded in events and in bytes."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from ._event import Event

OVERHEAD = 200  # bytes an event costs beyond its JSON (the objects, the deque's slot): an estimate


@dataclass
class _Stream:
    last: int = 0
    events: deque[tuple[Event, int]] = field(default_factory=deque)
    bytes: int = 0


class MemoryBackend:
    """A deque of events per conversation, at most ``max_len`` each and ``max_bytes`` in all: beyond that the
    least recently used conversations are forgotten (a reader of one starts again from what is kept).

    Readers wait on a condition (threads) or on a future the publisher wakes (asyncio: no thread per reader).
    """

    def __init__(self, max_len: int, max_bytes: int) -> None:
        self.max_len = max_len
        self.max_bytes = max_bytes
        self.bytes = 0
        self._streams: OrderedDict[str, _Stream] = OrderedDict()
        self._changed = threading.Condition()
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = {}

    def publish(self, conversation_id: str, type: str, data: dict[str, Any]) -> Event:
        size = OVERHEAD + len(type) + len(json.dumps(data, default=str))
        with self._changed:
            stream = self._streams.pop(conversation_id, None) or _Stream()
            event = Event(seq=stream.last + 1, type=type, data=data)
            stream.last = event.seq
            self._add(stream, event, size)
            if len(stream.events) > self.max_len:
                self._drop_oldest(stream)
            self._streams[conversation_id] = stream  # the most recently used, last
            while self.bytes > self.max_bytes and len(self._streams) > 1:
                _, forgotten = self._streams.popitem(last=False)
                self.bytes -= forgotten.bytes
            while self.bytes > self.max_bytes and len(stream.events) > 1:
                self._drop_oldest(stream)
            self._changed.notify_all()
            waiters = self._waiters.pop(conversation_id, [])
        for loop, future in waiters:
            loop.call_soon_threadsafe(_wake, future)
        return event

    def read(self, conversation_id: str, after: int, timeout: float) -> list[Event]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = self._after(conversation_id, after)
                remaining = deadline - time.monotonic()
                if found or remaining <= 0:
                    return found
                self._changed.wait(remaining)

    async def aread(self, conversation_id: str, after: int, timeout: float) -> list[Event]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            with self._changed:
                found = self._after(conversation_id, after)
                remaining = deadline - loop.time()
                if found or remaining <= 0:
                    return found
                future: asyncio.Future[None] = loop.create_future()
                self._waiters.setdefault(conversation_id, []).append((loop, future))
            try:
                await asyncio.wait_for(future, remaining)
            except TimeoutError:
                with self._changed:
                    waiting = self._waiters.get(conversation_id, [])
                    if (loop, future) in waiting:
                        waiting.remove((loop, future))
                    if not waiting:
                        self._waiters.pop(conversation_id, None)

    def last_seq(self, conversation_id: str) -> int:
        with self._changed:
            stream = self._streams.get(conversation_id)
            return stream.last if stream else 0

    def _after(self, conversation_id: str, after: int) -> list[Event]:
        stream = self._streams.get(conversation_id)
        if stream is None or stream.last <= after or not stream.events:
            return []
        # Sequence numbers are consecutive (events are dropped only from the front): the first one wanted is
        # found by arithmetic, not by a scan of every kept event on each read.
        skip = max(0, after + 1 - stream.events[0][0].seq)
        return [event for event, _ in itertools.islice(stream.events, skip, None)]

    def _add(self, stream: _Stream, event: Event, size: int) -> None:
        stream.events.append((event, size))
        stream.bytes += size
        self.bytes += size

    def _drop_oldest(self, stream: _Stream) -> None:
        _, size = stream.events.popleft()
        stream.bytes -= size
        self.bytes -= size


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
