"""Not a timing: what the app's turn does against the floor, the least a loop that stores the same rows and asks as
the app does can do.

Run: ``.venv/bin/python bench/floor_cost.py [--database postgresql] [--turns 20]``.

The floor is the hand-written persisting loop of ``_persisting_loop.py`` asking through the SDK's ``client.post``,
as the app asks: the same rows through plain ORM ``create()`` / ``update()``, its history kept in memory, no claim,
fence, usage counters, events or hooks. Both sides run the bench model's turns (three requests, two calls of
``add``) against the strict server in a process of its own; each makes its conversation in its first turn. Each
runs one conversation of ``--turns`` turns to warm the process up, then another, whose first and last turns are
counted as ``tests/core/test_turn_budget.py`` counts a turn: the statements on the default connection, the
transactions among them, and the Python and built-in function calls of this thread, the garbage collector off. The
counts are the same from run to run for the same code, so where the two sides' timings in ``loop_overhead.py`` are
within the machine's noise these say how much more the app does.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._postgres import postgres  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--turns", type=int, default=20)
    options = parser.parse_args()
    var = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-")))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    with postgres(var) if options.database == "postgresql" else nullcontext():  # started before Django is
        counts = measure(options.turns)
    print(f"One turn's work on {options.database}, 3 requests a turn: the app against the floor (the same rows "
          "through plain ORM writes, asked through client.post)")  # fmt: skip
    print(f"{'turn':<10}{'side':<8}{'statements':>11}{'commits':>9}{'calls':>9}{'app / floor':>13}")
    for turn in (1, options.turns):
        app, floor = counts["app"][turn], counts["floor"][turn]
        for side, (statements, commits, calls) in (("app", app), ("floor", floor)):
            ratio = f"{app[2] / floor[2]:.3f}" if side == "app" else ""
            print(f"{turn:<10}{side:<8}{statements:>11}{commits:>9}{calls:>9}{ratio:>13}")


def measure(turns: int) -> dict[str, dict[int, tuple[int, int, int]]]:
    """Each side's counts ``(statements, commits, calls)`` of the first and the last turn of its second
    conversation."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import override_settings

    from bench._app_runner import bench_settings, run  # sets Django up (and registers the bench's assistant)
    from bench._model import model_server
    from bench._persisting_loop import persisting_loop
    from tests.core.test_turn_budget import counting
    from toolcalling import Assistant

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    found: dict[str, dict[int, tuple[int, int, int]]] = {"app": {}, "floor": {}}

    def around(side: str) -> Callable[[], AbstractContextManager[Any]]:
        """What each turn of ``side``'s counted conversation runs in: counting, for its first and last turn."""
        turn = iter(range(1, turns + 1))

        @contextmanager
        def counted() -> Iterator[None]:
            number = next(turn)
            if number not in (1, turns):
                yield
                return
            with counting() as cost, committed() as commits:
                yield
            found[side][number] = (cost[0].statements, len(commits), cost[0].python_calls)

        return counted

    with model_server() as base_url:
        with override_settings(TOOLCALLING=bench_settings(base_url)):
            assistant = Assistant.get("bench")
            run(assistant, user, turns)  # warm
            run(assistant, user, turns, around=around("app"))
            persisting_loop(base_url, user, turns, post=True)  # warm
            persisting_loop(base_url, user, turns, post=True, around=around("floor"))
    return found


@contextmanager
def committed() -> Iterator[list[str]]:
    """The commits the block makes on the default connection (its list of database aliases, once it ended)."""
    from django.db import connection

    commits: list[str] = []
    commit = connection.commit

    def counted_commit() -> None:
        commits.append(connection.alias)
        commit()

    connection.commit = counted_commit  # type: ignore[method-assign]
    try:
        yield commits
    finally:
        del connection.commit


if __name__ == "__main__":
    main()
