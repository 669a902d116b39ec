"""The CPU one turn costs: the DRF POST against ``Assistant.run`` against the hand-written persisting loop.

Run: ``.venv/bin/python bench/cpu_per_turn.py [--turns 40] [--rounds 5] [--postgres]``.

Each side runs the same turn of a conversation made before the clock starts (three requests to the strict
local server, which runs in a process of its own: the model asks for ``add`` twice, then answers), in this one
process, sides taking turns round after round. The floor is the persisting loop asking through ``client.post``,
as the app asks (``floor_cost.py``). Measured per turn: the CPU time of this process
(``time.process_time``, the web side) and, with ``--postgres``, that of the PostgreSQL backend serving this
process's connection (its ``/proc/<pid>/stat``), the database side. Printed: the median per turn of each side
and the ratios the issue asks about, DRF POST / ``Assistant.run`` and ``Assistant.run`` / the persisting loop
(and / the floor), each from the same run. Lower is better.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
VAR = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-")))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

from bench._in_process import site_in_process  # noqa: E402
from bench._model import ANSWER, QUESTION  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
Side = Callable[[Any], None]  # one turn of the conversation it is given


def backend_seconds(pid: int | None) -> float:
    """User and system CPU seconds of the PostgreSQL backend ``pid`` so far (0 without PostgreSQL)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime and stime, after the name and state


def sides(base_url: str) -> tuple[dict[str, Side], Callable[[], Any]]:
    """The three sides, and what makes each turn's new conversation."""
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from bench._persisting_loop import persisting_loop
    from toolcalling import Assistant
    from toolcalling.models import Conversation

    class CPUAssistant(Assistant):
        id = "bench-cpu"
        instructions = "You add numbers."
        tools = ["add"]

    user, _ = get_user_model().objects.get_or_create(username="bench-cpu")
    assistant = Assistant.get("bench-cpu")
    client = APIClient()
    client.force_authenticate(user)

    def fresh() -> Conversation:
        return Conversation.objects.create(user=user, assistant_id="bench-cpu")

    def drf_post(conversation: Conversation) -> None:
        url = f"/api/toolcalling/conversations/{conversation.pk}/messages/"
        response = client.post(url, {"content": QUESTION}, format="json")
        assert response.status_code == 201, response.content
        assert response.json()["messages"][-1]["content"] == ANSWER

    def assistant_run(conversation: Conversation) -> None:
        assert assistant.run(user, QUESTION, conversation).reply == ANSWER

    def persisting(conversation: Conversation) -> None:
        persisting_loop(base_url, user, 1, conversation=conversation)

    def floor(conversation: Conversation) -> None:
        persisting_loop(base_url, user, 1, conversation=conversation, post=True)

    sides = {"DRF POST": drf_post, "Assistant.run": assistant_run, "persisting loop": persisting, "floor": floor}
    return sides, fresh


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--turns", type=int, default=40, help="turns per side and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--postgres", action="store_true", help="on a private PostgreSQL cluster (else SQLite)")
    options = parser.parse_args()
    with site_in_process(VAR, on_postgres=options.postgres) as base_url:
        from django.db import connection

        by_name, fresh = sides(base_url)
        connection.ensure_connection()
        pid = None
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                pid = cursor.fetchone()[0]
        web: dict[str, list[float]] = {name: [] for name in by_name}
        database: dict[str, list[float]] = {name: [] for name in by_name}
        for side in by_name.values():  # a warm-up turn each: imports, counter rows, connections
            side(fresh())
        for _round in range(options.rounds):
            for name, side in by_name.items():
                conversations = [fresh() for _ in range(options.turns)]
                started, started_db = time.process_time(), backend_seconds(pid)
                for conversation in conversations:
                    side(conversation)
                web[name].append((time.process_time() - started) / options.turns)
                database[name].append((backend_seconds(pid) - started_db) / options.turns)
    median = {name: statistics.median(values) for name, values in web.items()}
    median_db = {name: statistics.median(values) for name, values in database.items()}
    where = "PostgreSQL" if options.postgres else "SQLite (in this process)"
    print(f"CPU per turn, median of {options.rounds} rounds of {options.turns} turns; database: {where}")
    print(f"{'side':<18}{'web ms':>10}{'database ms':>14}")
    for name in by_name:
        db = f"{median_db[name] * 1000:>14.2f}" if options.postgres else f"{'-':>14}"
        print(f"{name:<18}{median[name] * 1000:>10.2f}{db}")
    print(f"DRF POST / Assistant.run (web): {median['DRF POST'] / median['Assistant.run']:.2f}x")
    for baseline in ("persisting loop", "floor"):
        print(f"Assistant.run / {baseline} (web): {median['Assistant.run'] / median[baseline]:.2f}x")
        if options.postgres:
            ratio = median_db["Assistant.run"] / median_db[baseline]
            print(f"Assistant.run / {baseline} (database): {ratio:.2f}x")


if __name__ == "__main__":
    main()
