"""The test suite's side of the mutation run (scripts/mutation.sh, docs/mutation.md), idle in any other run.

mutmut learns which tests reach a function from the calls it sees in its own process, but an approved call runs
in a Celery worker's: after each task the worker writes the functions it reached, and the test's teardown adds
them to the test's (a task that ends after its test's teardown counts for the next test: a test too many for a
mutant, never one too few). Against the mutants of an area only the tests of that area run
(``TOOLCALLING_MUTATION_TESTS``, set by the script), the quickest first, so a mutant a quick test kills costs
that test alone.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

_lock = threading.Lock()  # the test worker runs tasks in threads
NOT_A_MUTANT = ("", "stats", "fail", "mutant_generation")  # mutmut's other phases


def collecting() -> bool:
    """Whether mutmut is collecting which tests reach which function (it sets this; workers inherit it)."""
    return os.environ.get("MUTANT_UNDER_TEST") == "stats"


def trying_a_mutant() -> bool:
    return os.environ.get("MUTANT_UNDER_TEST", "") not in NOT_A_MUTANT


def hits_file() -> Path:
    return Path(os.environ["TOOLCALLING_TEST_VAR"]) / "mutmut-worker-hits.txt"


def report_worker_hits(**kwargs: object) -> None:
    """In a worker, after a task: append the functions it reached to this run's file."""
    from mutmut.state import state

    with _lock:
        hits = state()._stats
        names = sorted(hits)
        hits.clear()
        if names:
            with hits_file().open("a") as out:
                out.write("".join(f"{name}\n" for name in names))


def take_worker_hits() -> set[str]:
    """In the test process: the functions workers reached since the last call."""
    path = hits_file()
    try:
        names = set(path.read_text().split())
    except FileNotFoundError:
        return set()
    path.unlink(missing_ok=True)
    return names


def select(config: Any, items: list[Any]) -> None:
    """Keep the tests under ``TOOLCALLING_MUTATION_TESTS`` (paths, space-separated, set by the script for one
    area's run, in each of mutmut's phases); when a mutant is tried, the quickest first."""
    areas = os.environ.get("TOOLCALLING_MUTATION_TESTS", "").split()
    if not areas:
        return
    kept = [item for item in items if any(item.nodeid.startswith(area) for area in areas)]
    if len(kept) < len(items):
        ids = {item.nodeid for item in kept}
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in ids])
        items[:] = kept
    if not trying_a_mutant():
        return
    try:  # mutmut's stats run measured every test (the run's working directory is mutants/)
        durations = json.loads(Path("mutmut-stats.json").read_text())["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return
    items.sort(key=lambda item: durations.get(item.nodeid, float("inf")))
