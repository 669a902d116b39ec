"""The turn loop: one event loop per process for the turns streamed under ASGI."""

import asyncio
import threading

from toolcalling.engine import _turn_loop


def test_turns_on_the_loop_run_in_its_one_thread_with_nothing_of_the_caller_s_context():
    import contextvars

    mark = contextvars.ContextVar("mark", default="none")
    mark.set("the caller's")

    async def where():
        await asyncio.sleep(0)
        return threading.current_thread().name, mark.get()

    futures = [_turn_loop.start(where()) for _ in range(3)]
    assert [f.result(timeout=10) for f in futures] == [("toolcalling-turns", "none")] * 3
    assert not _turn_loop.turn_loop().running  # finished turns are forgotten


def test_a_forked_process_starts_a_loop_of_its_own(monkeypatch):
    first = _turn_loop.turn_loop()
    monkeypatch.setattr(first, "pid", first.pid + 1)  # as a gunicorn worker forked from it sees it
    second = _turn_loop.turn_loop()
    assert second is not first and second.thread.is_alive()
    assert _turn_loop.start(asyncio.sleep(0, result="ran")).result(timeout=10) == "ran"


def test_a_stopping_process_waits_for_the_turns_still_running():
    release = threading.Event()

    async def turn():
        while not release.is_set():
            await asyncio.sleep(0.01)
        return "stored"

    future = _turn_loop.start(turn())
    threading.Timer(0.2, release.set).start()
    _turn_loop._finish_running()  # what atexit calls
    assert future.done() and future.result() == "stored"
