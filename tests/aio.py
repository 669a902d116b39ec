"""Running a coroutine from a sync test, and an event loop's default executor that counts its busy threads."""

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """``asyncio.run`` in a thread of its own: the suite's browser (Playwright's sync API) keeps an event loop
    running in the main thread, as a site's own code may."""
    outcome = {}

    def target():
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # raised again in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=60)
    if thread.is_alive():
        raise AssertionError("the coroutine did not end within 60 s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class CountedThreads(concurrent.futures.ThreadPoolExecutor):
    """A loop's default executor that counts its threads busy at each moment (``busy``) and the work it was given
    (``submitted``): what waits in a thread of it (``sync_to_async(..., thread_sensitive=False)``,
    ``run_in_executor(None, ...)``) is seen while it waits."""

    def __init__(self) -> None:
        super().__init__(max_workers=4)
        self.busy = 0
        self.submitted = 0
        self.lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        with self.lock:
            self.submitted += 1

        def counted() -> Any:
            with self.lock:
                self.busy += 1
            try:
                return fn(*args, **kwargs)
            finally:
                with self.lock:
                    self.busy -= 1

        return super().submit(counted)

    def install(self) -> None:
        """From a coroutine: the running loop's default executor from now on."""
        asyncio.get_running_loop().set_default_executor(self)
