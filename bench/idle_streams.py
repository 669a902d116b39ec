"""A streamed turn under uvicorn with 200 idle event streams open, against the same turn with none, in one run.

Run: ``.venv/bin/python bench/idle_streams.py [--idle 200] [--rounds 7]``.

uvicorn serves the test site in a process of its own. The idle readers are ``GET .../events/`` streams of
other conversations, held open by one asyncio client; nothing is published to them. The streamed turn is a
``POST .../messages/`` with ``Accept: text/event-stream`` read to its ``turn_end``. The ratio of the median
times shows what the idle readers cost the turn (1.00: nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
VAR = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-")))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

import httpx2  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from bench._model import QUESTION, model_server  # noqa: E402
from bench._site import AUTH, SSE, site  # noqa: E402
from toolcalling.models import Conversation  # noqa: E402


def streamed_turn(base: str, conversation_id: str) -> float:
    started = time.perf_counter()
    url = f"{base}/api/toolcalling/conversations/{conversation_id}/messages/"
    with httpx2.Client(auth=AUTH, timeout=300) as client:
        with client.stream("POST", url, json={"content": QUESTION}, headers=SSE) as response:
            assert response.status_code == 200, response.read()
            for line in response.iter_lines():
                if line.startswith("event: turn_end"):
                    break
    return time.perf_counter() - started


class IdleStreams:
    """Streams of many conversations held open by one asyncio client in a thread of its own, reading nothing."""

    def __init__(self, base: str, conversation_ids: list[str]) -> None:
        self.base, self.conversation_ids = base, conversation_ids
        self.opened = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.stop = asyncio.Event()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self.hold_all(),), daemon=True)

    def __enter__(self) -> IdleStreams:
        self.thread.start()
        assert self.opened.wait(120), "the idle streams did not all open"
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(30)

    async def hold_all(self) -> None:
        limits = httpx2.Limits(max_connections=None)
        async with httpx2.AsyncClient(auth=AUTH, timeout=None, limits=limits) as client:
            waiting = [0]

            async def hold(conversation_id: str) -> None:
                url = f"{self.base}/api/toolcalling/conversations/{conversation_id}/events/"
                async with client.stream("GET", url, headers=SSE) as response:
                    await anext(response.aiter_lines())  # the opening line: this reader is waiting now
                    waiting[0] += 1
                    if waiting[0] == len(self.conversation_ids):
                        self.opened.set()
                    await self.stop.wait()

            await asyncio.gather(*(hold(c) for c in self.conversation_ids))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user(AUTH[0], password=AUTH[1])
    # Each streamed turn has a new conversation of its own, so every turn sends the same history.
    fresh = [
        str(Conversation.objects.create(user=user, assistant_id="helper").pk) for _ in range(2 * options.rounds + 1)
    ]
    idle = [str(Conversation.objects.create(user=user, assistant_id="helper").pk) for _ in range(options.idle)]
    with model_server() as base_url, site(base_url) as served:
        streamed_turn(served.base, fresh.pop())  # warm up
        alone = [streamed_turn(served.base, fresh.pop()) for _ in range(options.rounds)]
        with IdleStreams(served.base, idle):
            crowded = [streamed_turn(served.base, fresh.pop()) for _ in range(options.rounds)]
    ratio = statistics.median(crowded) / statistics.median(alone)
    print(f"uvicorn, median of {options.rounds} streamed turns")
    print(f"no idle stream:        {statistics.median(alone) * 1000:7.1f} ms")
    print(f"{options.idle} idle streams:     {statistics.median(crowded) * 1000:7.1f} ms")
    print(f"ratio crowded / alone: {ratio:7.2f}")


if __name__ == "__main__":
    main()
