"""Not a timing: what the app's turn does against the floor, the least a loop that stores the same rows and asks as
the app does can do.

Run: ``.venv/bin/python bench/floor_cost.py [--database postgresql] [--turns 20] [--peers]``.

The floor is the hand-written persisting loop of ``_persisting_loop.py`` asking through the SDK's ``client.post``,
as the app asks: the same rows through plain ORM ``create()`` / ``update()``, its history kept in memory, no claim,
fence, usage counters, events or hooks. Both sides run the bench model's turns (three requests, two calls of
``add``) against the strict server in a process of its own; each makes its conversation in its first turn. Each
runs one conversation of ``--turns`` turns to warm the process up, then another, whose first and last turns are
counted as ``tests/core/test_turn_budget.py`` counts a turn: the statements on the default connection, the
transactions among them, and the Python and built-in function calls of this thread, the garbage collector off. The
counts are the same from run to run for the same code, so where the two sides' timings in ``loop_overhead.py`` are
within the machine's noise these say how much more the app does.

``--peers`` counts pydantic-ai's stored turn beside them (``_persisting_peers.PydanticAIStored``: its whole history
in one row, read before the turn and written after it, through a ``psycopg`` or ``sqlite3`` connection of its own),
the persisting peer the app is level with on PostgreSQL's first turn: its function calls the same way, and its
statements as its connection sends them (each ``execute``, and each transaction's ``BEGIN`` and ``COMMIT``, which
psycopg sends around them; ``sqlite3`` begins only before a write). Its ``run_sync`` runs its event loop in this
thread, so every call of its turn is counted.
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
    parser.add_argument("--peers", action="store_true", help="also pydantic-ai's stored turn (requirements/bench.txt)")
    options = parser.parse_args()
    var = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-")))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    with postgres(var) if options.database == "postgresql" else nullcontext():  # started before Django is
        counts = measure(options.turns, options.database, var, peers=options.peers)
    print(f"One turn's work on {options.database}, 3 requests a turn: the app against the floor (the same rows "
          "through plain ORM writes, asked through client.post)")  # fmt: skip
    print(f"{'turn':<10}{'side':<14}{'statements':>11}{'commits':>9}{'calls':>9}{'app / side calls':>18}")
    for turn in (1, options.turns):
        app = counts["app"][turn]
        for side, found in counts.items():
            statements, commits, calls = found[turn]
            ratio = f"{app[2] / calls:.3f}" if side != "app" else ""
            print(f"{turn:<10}{side:<14}{statements:>11}{commits:>9}{calls:>9}{ratio:>18}")


def measure(turns: int, database: str, var: Path, *, peers: bool = False) -> dict[str, dict[int, tuple[int, int, int]]]:
    """Each side's counts ``(statements, commits, calls)`` of the first and the last turn of its second
    conversation; ``peers``: pydantic-ai's too, on ``database``."""
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
    sent = Sent()  # what pydantic-ai's own connection sends (the other sides' statements are Django's)

    def around(side: str) -> Callable[[], AbstractContextManager[Any]]:
        """What each turn of ``side``'s counted conversation runs in: counting, for its first and last turn."""
        turn = iter(range(1, turns + 1))

        @contextmanager
        def counted() -> Iterator[None]:
            number = next(turn)
            if number not in (1, turns):
                yield
                return
            if side == "pydantic-ai":
                before = sent.statements, sent.commits
                with counting() as cost:
                    yield
                statements, commits = sent.statements - before[0], sent.commits - before[1]
            else:
                with counting() as cost, committed() as done:
                    yield
                statements, commits = cost[0].statements, len(done)
            found[side][number] = (statements, commits, cost[0].python_calls)

        return counted

    with model_server() as base_url:
        with override_settings(TOOLCALLING=bench_settings(base_url)):
            assistant = Assistant.get("bench")
            run(assistant, user, turns)  # warm
            run(assistant, user, turns, around=around("app"))
            persisting_loop(base_url, user, turns, post=True)  # warm
            persisting_loop(base_url, user, turns, post=True, around=around("floor"))
            if peers:
                from bench._persisting_peers import PydanticAIStored

                found["pydantic-ai"] = {}
                peer = PydanticAIStored(database, var)
                peer(base_url, turns)  # warm (and connected)
                peer.connection = sent.wrap(peer.connection, database)
                peer(base_url, turns, around=around("pydantic-ai"))
                peer.close()
    return found


class Sent:
    """Counts what a DB-API connection sends: its statements and commits, as the server sees them."""

    def __init__(self) -> None:
        self.statements = 0
        self.commits = 0

    def wrap(self, connection: Any, database: str) -> Any:
        sent = self

        class Counted:
            """``connection`` with its ``execute`` and ``commit`` counted; anything else as it is."""

            def __getattr__(self, name: str) -> Any:
                return getattr(connection, name)

            def execute(self, sql: str, *args: Any) -> Any:
                # A transaction's BEGIN: psycopg sends it before a transaction's first statement, sqlite3 before
                # a write only.
                if database == "postgresql" and connection.info.transaction_status.name == "IDLE":
                    sent.statements += 1
                elif database == "sqlite" and not connection.in_transaction and not sql.startswith("SELECT"):
                    sent.statements += 1
                sent.statements += 1
                return connection.execute(sql, *args)

            def commit(self) -> None:
                opened = (
                    connection.info.transaction_status.name != "IDLE"
                    if database == "postgresql"
                    else connection.in_transaction
                )
                if opened:  # a COMMIT is sent only for an open transaction
                    sent.statements += 1
                    sent.commits += 1
                connection.commit()

        return Counted()


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
