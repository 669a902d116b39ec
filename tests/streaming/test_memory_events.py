"""The in-process event store: bounded in bytes as well as in events, and readable from an event loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from toolcalling.streaming._memory import MemoryBackend


def test_the_store_keeps_within_its_byte_bound_forgetting_the_least_recently_used():
    store = MemoryBackend(max_len=1000, max_bytes=50_000)
    text = "x" * 400
    for n in range(2000):
        store.publish(f"conversation-{n % 50}", "delta", {"content": text})
        assert store.bytes <= 50_000
    for _ in range(10):
        store.publish("fresh", "delta", {"content": text})
    assert store.bytes <= 50_000
    # The conversation published to last keeps its events, numbered without a gap.
    assert [e.seq for e in store.read("fresh", 0, 0)] == list(range(1, 11))
    # Conversations used less recently were forgotten whole: a reader of one starts again from what is kept.
    assert store.last_seq("conversation-0") == 0


def test_one_conversation_alone_over_the_bound_keeps_its_newest_events():
    store = MemoryBackend(max_len=1000, max_bytes=5_000)
    for n in range(100):
        store.publish("only", "delta", {"content": f"{n:04d}" * 50})
    kept = store.read("only", 0, 0)
    assert store.bytes <= 5_000 and kept[-1].seq == 100 and len(kept) < 100
    assert [e.seq for e in kept] == list(range(kept[0].seq, 101))


def run_loop(coroutine_function: Any) -> Any:
    """Run a coroutine on a loop of its own, in a thread of its own: the browser tests keep a loop running in
    the main thread for the whole session (Playwright's sync API)."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(asyncio.run(coroutine_function())))
    thread.start()
    thread.join(60)
    return result[0]


def test_an_async_reader_is_woken_by_a_publisher_in_another_thread():
    store = MemoryBackend(max_len=100, max_bytes=1_000_000)

    async def read() -> list:
        publisher = threading.Timer(0.05, store.publish, args=("c", "message", {"id": 1}))
        publisher.start()
        try:
            return await store.aread("c", 0, 30)
        finally:
            publisher.join()

    events = run_loop(read)
    assert [(e.seq, e.type) for e in events] == [(1, "message")]
    # An async read with nothing to read ends at its timeout, holding nothing.
    assert run_loop(lambda: store.aread("c", 1, 0.01)) == []
    assert store._waiters == {}
