"""The process's event loop for turns started by a request under ASGI: one thread waits for all their models.

A streamed turn under an ASGI server runs here (``start``): the async driver (``_async.drive``) awaits the model
on this loop, and runs the turn's steps (claims, writes, tools) in the loop's executor threads, so a turn that
waits for its model holds no thread. It is not the server's own loop on purpose: a turn outlives the request
that started it (a reader that hangs up before the response began still finds its turn finished and stored),
its events are published from here without ever pausing the server's loop, and it runs the same under any
ASGI server and under Django's test client, whose loop ends with each request.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextvars
import logging
import os
import threading
from collections.abc import Coroutine
from typing import Any

logger = logging.getLogger("toolcalling")

# Threads for the turns' steps and tools (each step of one turn in turn, a few milliseconds of database work,
# or a tool): busy only while a step runs, never while a model answers. Each keeps its database connection from
# step to step (``_async.drop_broken_connections``), so a process holds at most this many for its turns.
STEP_THREADS = 32
# How long a stopping process waits for the turns still running here before it exits without them.
EXIT_WAIT = 30.0


class TurnLoop:
    """An event loop in a daemon thread of its own, and the turns running on it."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        executor = concurrent.futures.ThreadPoolExecutor(STEP_THREADS, thread_name_prefix="toolcalling-step")
        self.loop.set_default_executor(executor)
        self.running: set[concurrent.futures.Future[Any]] = set()
        self.thread = threading.Thread(target=self.loop.run_forever, name="toolcalling-turns", daemon=True)
        self.thread.start()

    def start(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        # In a context of its own: nothing of the request that started it (asgiref's per-request thread for
        # sync code, which ends with the request; its language, which the coroutine sets again) comes along.
        future = contextvars.Context().run(asyncio.run_coroutine_threadsafe, coroutine, self.loop)
        self.running.add(future)
        future.add_done_callback(self.running.discard)
        return future


_current: TurnLoop | None = None
_lock = threading.Lock()


def turn_loop() -> TurnLoop:
    """This process's loop, started at its first turn (a forked server worker starts its own)."""
    global _current
    with _lock:
        if _current is None or _current.pid != os.getpid():
            _current = TurnLoop()
        return _current


def start(coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
    """Run ``coroutine`` on the turn loop; its future (the caller need not wait for it)."""
    return turn_loop().start(coroutine)


@atexit.register
def _finish_running() -> None:
    # A stopping server (its workers get SIGTERM and end their requests first) lets the turns still running
    # finish and be stored rather than leave their conversations running until the stale sweep.
    current = _current
    if current is None or current.pid != os.getpid() or not current.running:
        return
    _, unfinished = concurrent.futures.wait(list(current.running), timeout=EXIT_WAIT)
    if unfinished:
        logger.warning("%d turns were still running when the process stopped", len(unfinished))
