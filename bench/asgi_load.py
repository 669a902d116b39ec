"""Many users streaming turns at once under uvicorn and under gunicorn's threaded workers, against the ideal.

Run: ``.venv/bin/python bench/asgi_load.py [--users 200] [--turns 2] [--latency 2] [--requests 1]
[--threads 32 200] [--sync] [--database sqlite]``.

Each server serves the test site with ``--workers`` processes (default 2) on a private PostgreSQL cluster (or
SQLite); the bench model answers each request after ``--latency`` seconds, ``--requests`` requests per turn (1: a
plain answer at once; 3: two calls of ``add``, then the answer). The load: ``--users`` users, each with a new
conversation of their own made beforehand, start together and each does ``--turns`` streamed turns one after another
(``POST .../messages/`` with ``Accept: text/event-stream``, read to ``turn_end``, which must say ``idle``). One
asyncio client in this process sends them all; the servers and the model run in processes of their own. The
baseline, measured on the same server just before: one user alone (``--lone`` rounds of ``--turns`` turns), whose
median turn is the lone turn. Ideal throughput: every user always busy with a turn as fast as the lone one (users /
lone turn). Printed per server: turns/s and its ratio to the ideal, p50 and p99 turn latency, p99 against the lone
turn, the turns that failed, and the CPU per turn of the server's processes, PostgreSQL's, the client's and the
model's: the ideal takes ``ideal * (web + db + client + model ms) / 1000`` cores, so 2 cores at 200 users and a
2-second model leave about 20 ms a turn in all. The test settings switch the turn throttle off (``toolcalling_turn``
rate ``None``), so one site takes every user's turns.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
VAR = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-")))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import httpx2  # noqa: E402

from bench._model import QUESTION, model_server  # noqa: E402
from bench._postgres import postgres, server_pid  # noqa: E402
from bench._site import AUTH, SSE, cpu_seconds, site  # noqa: E402

WARM_USERS = 8  # turns at once before the baseline, so every worker process has served some


@dataclass
class Turns:
    """The seconds of the turns that ended ``idle``, and why the others did not."""

    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def add(self, seconds: float, error: str | None) -> None:
        if error is None:
            self.seconds.append(seconds)
        else:
            self.errors.append(error)


@dataclass
class Server:
    name: str
    server: str
    threads: int = 1


async def streamed_turn(client: httpx2.AsyncClient, base: str, username: str, conversation_id: str) -> str | None:
    """One streamed turn read to its ``turn_end``: ``None`` when it ended ``idle``, else what went wrong."""
    url = f"{base}/api/toolcalling/conversations/{conversation_id}/messages/"
    auth = (username, AUTH[1])
    event, error = "", ""
    try:
        async with client.stream("POST", url, json={"content": QUESTION}, headers=SSE, auth=auth) as response:
            if response.status_code != 200:
                return f"HTTP {response.status_code}: {(await response.aread())[:200]!r}"
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: ") and event == "error":
                    error = line.removeprefix("data: ")
                elif line.startswith("data: ") and event == "turn_end":
                    status = json.loads(line.removeprefix("data: "))["status"]
                    return None if status == "idle" else f"turn ended {status}: {error}"
    except httpx2.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
    return "the stream closed before its turn_end"


async def user_turns(client: httpx2.AsyncClient, base: str, username: str, conversation_id: str, turns: int,
                     into: Turns) -> None:  # fmt: skip
    for _ in range(turns):
        started = time.perf_counter()
        error = await streamed_turn(client, base, username, conversation_id)
        into.add(time.perf_counter() - started, error)


async def load(base: str, users: list[tuple[str, str]], turns: int) -> tuple[float, Turns]:
    """All ``users`` (name, conversation) started together; the seconds until the last is done, and the turns."""
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=None)
    done = Turns()
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(900), limits=limits) as client:
        started = time.perf_counter()
        await asyncio.gather(*(user_turns(client, base, name, c, turns, done) for name, c in users))
        return time.perf_counter() - started, done


def conversations(usernames: list[str]) -> list[tuple[str, str]]:
    """A new conversation of the test site's ``helper`` for each user, made outside the clock."""
    from django.contrib.auth import get_user_model

    from toolcalling.models import Conversation

    users = get_user_model().objects.in_bulk(usernames, field_name="username")
    made = [Conversation.objects.create(user=users[name], assistant_id="helper") for name in usernames]
    return [(name, str(c.pk)) for name, c in zip(usernames, made, strict=True)]


def measure(server: Server, base_url: str, options: argparse.Namespace, usernames: list[str]) -> dict[str, object]:
    database = server_pid(VAR) if options.database == "postgresql" else None
    with site(base_url, server.server, workers=options.workers, threads=server.threads) as served:
        warm = conversations(usernames[:WARM_USERS])
        asyncio.run(load(served.base, warm, 1))
        lone = Turns()
        for _ in range(options.lone):
            _, alone = asyncio.run(load(served.base, conversations([AUTH[0]]), options.turns))
            lone.seconds += alone.seconds
            lone.errors += alone.errors
        users = conversations(usernames)
        loadavg = os.getloadavg()[0]
        before = cpu_use(served.pid, database)
        elapsed, turns = asyncio.run(load(served.base, users, options.turns))
        cpu = {part: (seconds - before[part]) * 1000 / (options.users * options.turns)  # ms per turn
               for part, seconds in cpu_use(served.pid, database).items()}  # fmt: skip
    lone_turn = statistics.median(lone.seconds)
    ideal = len(users) / lone_turn  # turns/s with every user always in a turn as fast as the lone one
    throughput = len(turns.seconds) / elapsed
    p99 = statistics.quantiles(turns.seconds, n=100)[98] if len(turns.seconds) > 1 else max(turns.seconds, default=0)
    for error in sorted(set(turns.errors + lone.errors))[:5]:
        print(f"{server.name}: {error}", file=sys.stderr)
    return {
        "server": server.name, "load": f"{loadavg:.2f}", "lone s": f"{lone_turn:.2f}",
        "turns/s": f"{throughput:.1f}", "ideal": f"{ideal:.1f}", "ratio": f"{throughput / ideal:.2f}",
        "p50 s": f"{statistics.median(turns.seconds) if turns.seconds else 0:.2f}", "p99 s": f"{p99:.2f}",
        "p99 / lone": f"{p99 / lone_turn:.2f}", "errors": f"{len(turns.errors)} of {options.users * options.turns}",
        **{f"{part} ms": f"{ms:.0f}" for part, ms in cpu.items()},
    }  # fmt: skip


def cpu_use(site: int, database: int | None) -> dict[str, float]:
    """CPU seconds so far of the site's processes, PostgreSQL's (SQLite's are the site's), this client, and the
    model server: the rest of what this process started."""
    used = {"web": cpu_seconds(site), "db": cpu_seconds(database) if database else 0.0, "client": time.process_time()}
    used["model"] = cpu_seconds(os.getpid()) - sum(used.values())
    if not database:
        del used["db"]
    return used


def servers(options: argparse.Namespace) -> list[Server]:
    chosen = [Server(f"uvicorn --workers {options.workers}", "uvicorn")]
    chosen += [Server(f"gunicorn gthread --threads {t}", "gunicorn", t) for t in options.threads]
    if options.sync:
        chosen.append(Server("gunicorn sync", "gunicorn"))
    return chosen


def table(rows: list[dict[str, object]]) -> str:
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--turns", type=int, default=2, help="streamed turns per user, one after another")
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per model request")
    parser.add_argument("--requests", type=int, default=1, choices=(1, 2, 3), help="model requests per turn")
    parser.add_argument("--workers", type=int, default=2, help="server processes")
    parser.add_argument("--threads", type=int, nargs="*", default=[32], help="gunicorn gthread runs, threads each")
    parser.add_argument("--sync", action="store_true", help="also gunicorn's sync workers (one turn at a time)")
    parser.add_argument("--lone", type=int, default=3, help="rounds of the lone user, the baseline")
    parser.add_argument("--database", choices=("postgresql", "sqlite"), default="postgresql")
    # A thread per streamed turn holds a connection; so does every gunicorn thread (persistent connections).
    parser.add_argument("--max-connections", type=int, default=1000, help="PostgreSQL's max_connections")
    options = parser.parse_args()
    with ExitStack() as stack:
        if options.database == "postgresql":
            stack.enter_context(postgres(VAR, options.max_connections))
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        usernames = [f"{AUTH[0]}-{n}" for n in range(options.users)]
        for username in [AUTH[0], *usernames]:
            get_user_model().objects.create_user(username, password=AUTH[1])
        base_url = stack.enter_context(model_server(options.latency, requests=options.requests))
        rows = [measure(server, base_url, options, usernames) for server in servers(options)]
    print(f"{options.users} users x {options.turns} streamed turns, {options.requests} model request(s) of "
          f"{options.latency:g} s per turn, {options.workers} worker processes, {options.database}, "
          f"{os.cpu_count()} CPUs (load: 1-minute average before the load)")  # fmt: skip
    print(table(rows))


if __name__ == "__main__":
    main()
