"""Many users streaming turns at once under uvicorn and under gunicorn's threaded workers, against a bare Django
async view, a persisting one, and against the ideal.

Run: ``.venv/bin/python bench/asgi_load.py [--users 200] [--turns 2] [--latency 2] [--requests 1] [--rounds 2]
[--lone 3] [--threads 32 200] [--sync] [--no-bare] [--no-persisting] [--database sqlite]``.

Each server serves the test site with ``--workers`` processes (default 2) on a private PostgreSQL cluster (or
SQLite); the bench model answers each request after ``--latency`` seconds, ``--requests`` requests per turn (1: a
plain answer at once; 3: two calls of ``add``, then the answer). The load: ``--users`` users, each with a new
conversation of their own made beforehand, start together and each does ``--turns`` streamed turns one after another
(``POST .../messages/`` with ``Accept: text/event-stream``, read to ``turn_end``, which must say ``idle``). One
asyncio client in this process sends them all; the servers and the model run in processes of their own.

The baseline under uvicorn is a bare Django async view (``bench/_bare_view.py``, served beside the test site's URLs
by ``bench._bare_settings``): it authenticates the user as the app's API does, makes the same streamed model
request through the async openai SDK (the system message, the user's text, the assistant's tools), streams the
deltas back and stores nothing. The bare view sends a conversation's first request every turn, so from a user's
second turn on the app's request is longer by the history.

The persisting view (``bench/_persisting_view.py``, left out with ``--no-persisting``) is the bare view plus what
a developer's own streamed chat view must do for a stored turn, by hand with the ORM: per request it loads the
user's conversation (a new one of each user's per round, as the app's), works out the tools this user may use
(their permissions checked every request), stores the user's message and sets the conversation running, sends the
stored history as the messages (so its request grows as the app's does), then stores the answer with its token
counts and adds them to the conversation's totals. The same rows as the hand-written persisting loop of
``loop_overhead.py`` (``bench/_persisting_loop.py``): no claim or fencing, no usage counters, no events.

Before measuring, a probe message through each side (``bench._model.PROBE``) checks that the model server gets the
same request from each (and from the app's and the persisting view's second turn, with the first in its history);
the run stops if not. Then ``--rounds`` loads of each side with the same users, turns and latency, interleaved on
the same server (app, bare, persisting, persisting, bare, app, ...): each row gives its turns/s over all its rounds
against the bare view's (``of bare``; in brackets the lowest and highest ratio of a round to the bare round next to
it), and the app's against the persisting view's (``of persisting``).

The ideal, when ``--lone`` is not 0: one user alone (``--lone`` rounds of ``--turns`` turns) on the same server
just before; ideal throughput is every user always busy with a turn as fast as the lone one (users / lone turn).
Printed per server and side: turns/s and its ratios, p50 and p99 turn latency, the turns that failed, the 1-minute
load average before each round (the machine may be shared), and the CPU per turn of the server's processes,
PostgreSQL's, the client's and the model's: the ideal takes ``ideal * (web + db + client + model ms) / 1000``
cores, so 2 cores at 200 users and a 2-second model leave about 20 ms a turn in all. The test settings switch the
turn throttle off (``toolcalling_turn`` rate ``None``), so one site takes every user's turns.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
VAR = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-")))
# The test site's settings with the bare view's URL added (bench/_bare_view.py); the servers inherit them.
os.environ["DJANGO_SETTINGS_MODULE"] = "bench._bare_settings"

import httpx2  # noqa: E402

from bench._model import PROBE, QUESTION, model_server  # noqa: E402
from bench._postgres import postgres, server_pid  # noqa: E402
from bench._site import AUTH, SSE, cpu_seconds, site  # noqa: E402

WARM_USERS = 8  # turns at once before the baseline, so every worker process has served some
BASELINES = ("bare", "persisting")  # the async views the app is measured against, under uvicorn
# The baselines each side's row gives its ratio to, when they are run.
AGAINST: dict[str, tuple[str, ...]] = {"app": BASELINES, "bare": (), "persisting": ("bare",)}


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
    # The async baselines measured too, interleaved with the app (under uvicorn only): "bare", "persisting".
    baselines: tuple[str, ...] = ()

    @property
    def sides(self) -> list[str]:
        return ["app", *self.baselines]


def turn_path(side: str, conversation_id: str) -> str:
    """The path a side's turn is posted to: the app's messages URL of the conversation, the bare view's (which
    has none), or the persisting view's of the conversation (bench/_bare_urls.py)."""
    if side == "bare":
        return "/bench/bare/turn/"
    if side == "persisting":
        return f"/bench/persisting/turn/{conversation_id}/"
    return f"/api/toolcalling/conversations/{conversation_id}/messages/"


async def streamed_turn(client: httpx2.AsyncClient, base: str, username: str, path: str) -> str | None:
    """One streamed turn read to its ``turn_end``: ``None`` when it ended ``idle``, else what went wrong."""
    url = base + path
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


async def user_turns(client: httpx2.AsyncClient, base: str, username: str, path: str, turns: int,
                     into: Turns) -> None:  # fmt: skip
    for _ in range(turns):
        started = time.perf_counter()
        error = await streamed_turn(client, base, username, path)
        into.add(time.perf_counter() - started, error)


async def load(base: str, users: list[tuple[str, str]], turns: int) -> tuple[float, Turns]:
    """All ``users`` (name, path of their turns) started together; the seconds until the last is done, and the
    turns."""
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


async def probed(base: str, path: str) -> str:
    """The text a streamed turn of ``PROBE`` got back: the request the model server received, as JSON."""
    pieces, event = [], ""
    async with httpx2.AsyncClient(timeout=60) as client:
        url = base + path
        async with client.stream("POST", url, json={"content": PROBE}, headers=SSE, auth=AUTH) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: ") and event == "delta":
                    pieces.append(json.loads(line.removeprefix("data: "))["content"])
    return "".join(pieces)


def same_model_request(base: str, sides: list[str]) -> None:
    """Stop unless the model server gets the same request from the app's first turn of a conversation and from
    each baseline's, and from the app's second turn and the persisting view's (the history sent back as stored)."""
    asked: dict[str, list[dict[str, Any]]] = {}
    for side in sides:
        ((_, path),) = side_users(side, [AUTH[0]])
        turns = 1 if side == "bare" else 2  # the bare view keeps no history
        asked[side] = [json.loads(asyncio.run(probed(base, path))) for _ in range(turns)]
    for side in sides[1:]:
        for turn, (app, theirs) in enumerate(zip(asked["app"], asked[side], strict=False), 1):
            if theirs != app:
                differ = sorted(k for k in app.keys() | theirs.keys() if app.get(k) != theirs.get(k))
                sys.exit(f"the app and the {side} view ask the model differently at turn {turn}, in {differ}:\n"
                         f"{app}\n{theirs}")  # fmt: skip


def measure(
    server: Server, base_url: str, options: argparse.Namespace, usernames: list[str]
) -> list[dict[str, object]]:
    """The server's rows: the app's turns, and each baseline's measured in rounds interleaved with them."""
    database = server_pid(VAR) if options.database == "postgresql" else None
    sides = server.sides
    rounds: dict[str, list[Round]] = {side: [] for side in sides}
    with site(base_url, server.server, workers=options.workers, threads=server.threads) as served:
        if server.baselines:
            same_model_request(served.base, sides)
        for side in sides:
            asyncio.run(load(served.base, side_users(side, usernames[:WARM_USERS]), 1))
        lone = Turns()
        for _ in range(options.lone):
            _, alone = asyncio.run(load(served.base, side_users("app", [AUTH[0]]), options.turns))
            lone.seconds += alone.seconds
            lone.errors += alone.errors
        for n in range(options.rounds):
            for side in sides if n % 2 == 0 else sides[::-1]:  # app, bare, persisting, persisting, bare, app, ...
                users = side_users(side, usernames)
                loadavg = os.getloadavg()[0]
                before = cpu_use(served.pid, database)
                elapsed, turns = asyncio.run(load(served.base, users, options.turns))
                cpu = {part: seconds - before[part] for part, seconds in cpu_use(served.pid, database).items()}
                rounds[side].append(Round(loadavg, elapsed, turns, cpu))
    errors = {e for side in sides for r in rounds[side] for e in r.turns.errors} | set(lone.errors)
    for error in sorted(errors)[:5]:
        print(f"{server.name}: {error}", file=sys.stderr)
    lone_turn = statistics.median(lone.seconds) if lone.seconds else None
    return [row(server.name, side, rounds[side], against(side, rounds), lone_turn, options) for side in sides]


def against(side: str, rounds: dict[str, list[Round]]) -> dict[str, list[Round]]:
    """The baselines' rounds a side's row is measured against: the bare view's, and for the app's the persisting
    view's too."""
    return {baseline: rounds[baseline] for baseline in AGAINST[side] if baseline in rounds}


def side_users(side: str, usernames: list[str]) -> list[tuple[str, str]]:
    """(name, path of their turns) of each user: a new conversation of each's for the app and the persisting
    view, the one URL of the bare view."""
    if side == "bare":
        return [(name, turn_path(side, "")) for name in usernames]
    return [(name, turn_path(side, conversation)) for name, conversation in conversations(usernames)]


@dataclass
class Round:
    """One load of every user's turns on one side: the load average before it, its seconds, its turns, and the
    CPU seconds each part used during it."""

    loadavg: float
    elapsed: float
    turns: Turns
    cpu: dict[str, float]

    @property
    def throughput(self) -> float:
        return len(self.turns.seconds) / self.elapsed


def row(name: str, side: str, rounds: list[Round], baselines: dict[str, list[Round]], lone_turn: float | None,
        options: argparse.Namespace) -> dict[str, object]:  # fmt: skip
    """One side's row: its turns/s over all its rounds, against each of ``baselines`` (each round's ratio to the
    baseline's round next to it in brackets) and against the ideal when there is a lone turn."""
    seconds = [s for r in rounds for s in r.turns.seconds]
    elapsed = sum(r.elapsed for r in rounds)
    throughput = len(seconds) / elapsed
    total = options.users * options.turns * len(rounds)
    p99 = statistics.quantiles(seconds, n=100)[98] if len(seconds) > 1 else max(seconds, default=0)
    loads = [r.loadavg for r in rounds]
    result: dict[str, object] = {"server": name, "side": side, "load": f"{min(loads):.2f}–{max(loads):.2f}",
                                 "turns/s": f"{throughput:.2f}"}  # fmt: skip
    for baseline, theirs in baselines.items():
        their_throughput = sum(len(r.turns.seconds) for r in theirs) / sum(r.elapsed for r in theirs)
        each = [r.throughput / b.throughput for r, b in zip(rounds, theirs, strict=True)]
        result[f"of {baseline}"] = f"{throughput / their_throughput:.2f} ({min(each):.2f}–{max(each):.2f})"
    if lone_turn:
        result["of ideal"] = f"{throughput / (options.users / lone_turn):.2f}"
    result |= {
        "p50 s": f"{statistics.median(seconds) if seconds else 0:.2f}", "p99 s": f"{p99:.2f}",
        "errors": f"{total - len(seconds)} of {total}",
        **{f"{part} ms": f"{sum(r.cpu[part] for r in rounds) * 1000 / total:.1f}" for part in rounds[0].cpu},
    }  # fmt: skip
    return result


def cpu_use(site: int, database: int | None) -> dict[str, float]:
    """CPU seconds so far of the site's processes, PostgreSQL's (SQLite's are the site's), this client, and the
    model server: the rest of what this process started."""
    used = {"web": cpu_seconds(site), "db": cpu_seconds(database) if database else 0.0, "client": time.process_time()}
    used["model"] = cpu_seconds(os.getpid()) - sum(used.values())
    if not database:
        del used["db"]
    return used


def servers(options: argparse.Namespace) -> list[Server]:
    left_out = {"bare": options.no_bare, "persisting": options.no_persisting}
    baselines = tuple(b for b in BASELINES if not left_out[b])
    chosen = [Server(f"uvicorn --workers {options.workers}", "uvicorn", baselines=baselines)]
    chosen += [Server(f"gunicorn gthread --threads {t}", "gunicorn", t) for t in options.threads]
    if options.sync:
        chosen.append(Server("gunicorn sync", "gunicorn"))
    return chosen


def table(rows: list[dict[str, object]]) -> str:
    columns = list(dict.fromkeys(c for row in rows for c in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row.get(c, "—")) for c in columns) + " |" for row in rows]
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
    parser.add_argument("--lone", type=int, default=3, help="rounds of the lone user, the ideal's baseline (0: none)")
    parser.add_argument("--rounds", type=int, default=2, help="loads per side, the app's and the baselines' in turn")
    parser.add_argument("--no-bare", action="store_true", help="without the bare view's rounds")
    parser.add_argument("--no-persisting", action="store_true", help="without the persisting view's rounds")
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
        rows = [r for server in servers(options) for r in measure(server, base_url, options, usernames)]
    print(f"{options.users} users x {options.turns} streamed turns, {options.requests} model request(s) of "
          f"{options.latency:g} s per turn, {options.workers} worker processes, {options.database}, "
          f"{options.rounds} round(s) a side, {os.cpu_count()} CPUs (load: 1-minute averages before each round; "
          f"CPU: ms a turn)")  # fmt: skip
    print("$ " + " ".join(sys.argv))
    print(table(rows))


if __name__ == "__main__":
    main()
