"""Many turns at once on one event loop (``Assistant.arun``) against the ideal, and against one turn alone.

Run: ``.venv/bin/python bench/async_turns.py [--users 200] [--latency 2] [--postgres]``.

Every model request takes ``--latency`` seconds (the strict local server, in a process of its own, answers
each in a thread); a turn makes three (the model asks for ``add`` twice, then answers). First one turn alone,
then ``--users`` turns started together, each a new conversation, in this one process on one event loop.
Printed: the throughput against the ideal (every turn as fast as the lone one, all at once) and the slowest
turns (p99) against the lone turn. The writes and tools of every turn run in Django's one thread for sync
code, so what grows with the users is that thread's queue, not threads waiting for the model.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
VAR = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-")))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

from bench._in_process import site_in_process  # noqa: E402
from bench._model import ANSWER, QUESTION  # noqa: E402


async def timed(assistant: object, user: object) -> float:
    started = time.perf_counter()
    result = await assistant.arun(user, QUESTION)  # type: ignore[attr-defined]
    assert result.reply == ANSWER, result.reply
    return time.perf_counter() - started


async def load(assistant: object, user: object, users: int) -> tuple[float, list[float]]:
    started = time.perf_counter()
    times = await asyncio.gather(*(timed(assistant, user) for _ in range(users)))
    return time.perf_counter() - started, list(times)


async def measure(assistant: object, user: object, users: int) -> tuple[float, float, list[float]]:
    """One event loop for all of it, as a server process has: the lone turn (best of two; the first also warms
    up imports, counter rows and connections), then the load."""
    lone = min([await timed(assistant, user), await timed(assistant, user)])
    elapsed, times = await load(assistant, user, users)
    return lone, elapsed, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per model request")
    parser.add_argument("--postgres", action="store_true", help="on a private PostgreSQL cluster (else SQLite)")
    options = parser.parse_args()
    with site_in_process(VAR, on_postgres=options.postgres, latency=options.latency):
        from django.contrib.auth import get_user_model

        from toolcalling import Assistant

        class AsyncBenchAssistant(Assistant):
            id = "bench-async"
            instructions = "You add numbers."
            tools = ["add"]

        user, _ = get_user_model().objects.get_or_create(username="bench-async")
        assistant = Assistant.get("bench-async")
        lone, elapsed, times = asyncio.run(measure(assistant, user, options.users))
    ideal = options.users / lone  # turns per second if every turn took the lone turn's time, all at once
    throughput = options.users / elapsed
    p99 = statistics.quantiles(times, n=100)[98] if len(times) > 1 else times[0]
    where = "PostgreSQL" if options.postgres else "SQLite"
    print(f"{options.users} turns at once on one event loop, {options.latency:g} s per model request, {where}")
    print(f"lone turn {lone:.2f} s; all {options.users} in {elapsed:.2f} s")
    print(f"throughput {throughput:.1f} turns/s, ideal {ideal:.1f}: {throughput / ideal:.2f} of the ideal")
    print(f"p99 turn {p99:.2f} s: {p99 / lone:.2f}x the lone turn; median {statistics.median(times):.2f} s")


if __name__ == "__main__":
    main()
