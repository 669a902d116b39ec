"""A chaos run: a real deployment on this machine, its processes killed at random while users talk to it, and what
that cost counted afterwards.

Run: ``.venv/bin/python bench/chaos.py [--seconds 60] [--users 8] [--database postgresql]``: for that long, a random
web process or worker killed about every ``--kill-every`` seconds. Or a run of a given size: ``--turns 1000
--web-kills 50 --worker-kills 50 --deploys 50 --redis-restarts 50 --postgres-restarts 50 --seconds 3600``: the
load goes on until that many turns were acknowledged and each of those disruptions happened (in random order,
about ``--kill-every`` seconds apart), and never longer than ``--seconds``.

The deployment: two web processes (uvicorn and gunicorn) serving the test site, two Celery workers, a private
redis-server as the broker and the event streams' store, the site's database (a private PostgreSQL cluster, or
SQLite), the strict model server with latency, and a counting HTTP service that records every delivery per
idempotency key. Each user's turn asks for two tools that send to that service: ``courier_charge`` (not safe to
run twice) and ``courier_receipt`` (``idempotent``). A third of the users wait for the JSON answer, a third stream
the turn (server-sent events) and a third run it in the background (202) and follow its events; a stream cut by a
kill is resumed from another web process with ``Last-Event-ID``.

The disruptions: a web process or a worker killed with ``SIGKILL`` (its process group, as the OOM killer of a
container), a web process stopped with ``SIGTERM`` (as a deploy does; both servers given 5 s to finish), Redis
killed and started again empty, PostgreSQL stopped in immediate mode (``SIGQUIT``: every backend quits at once,
no checkpoint, crash recovery on start) and started again; each started again at once. The sweep runs every
second with ``STALE_TURN_TIMEOUT`` of a few seconds, and a "staff member" settles each call whose outcome is
unknown the way a person would: by looking at the service.

Afterwards, once the sweep has had time to move everything on, it reports: acknowledged messages lost, charges
delivered twice (a non-idempotent side effect repeated), receipt keys delivered more than once (which the
service, taking the key, drops), conversations left running or waiting, calls left without an outcome, event
streams that could not be resumed (a gap, numbers that went back, or no ``turn_end``), and the time from each
disruption to each conversation it interrupted moving again (p50, p99).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import random
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
VAR = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-chaos-")))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

WEB_KILL, WORKER_KILL, DEPLOY = "web SIGKILL", "worker SIGKILL", "web SIGTERM (deploy)"
REDIS_RESTART, POSTGRES_RESTART = "Redis restarted empty", "PostgreSQL restarted (immediate)"
FOLLOW_AT_MOST = 120.0  # seconds a user follows one turn's events before it calls the stream stuck


class Deliveries:
    """The counting service: ``POST /<kind>/<key>`` counts one delivery of ``kind`` with that idempotency key."""

    def __init__(self, latency: float = 0.0) -> None:
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self.lock = threading.Lock()
        deliveries = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
                _, kind, key = self.path.split("/", 2)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with deliveries.lock:
                    deliveries.counts[(kind, key)] += 1
                time.sleep(latency)  # delivered, and not answered yet: a kill now leaves the outcome unknown
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def seen(self, kind: str, key: str) -> int:
        with self.lock:
            return self.counts[(kind, key)]

    def above_one(self, kind: str) -> int:
        with self.lock:
            return sum(1 for (k, _), n in self.counts.items() if k == kind and n > 1)


class Process:
    """One process of the deployment, killed and started again by the chaos. ``ready``: true once it serves."""

    def __init__(
        self,
        name: str,
        kind: str,
        command: list[str],
        env: dict[str, str],
        ready: Callable[[], bool] | None = None,
        **popen: Any,
    ) -> None:
        self.name, self.kind, self.command, self.env, self.ready = name, kind, command, env, ready
        self.popen = {"cwd": ROOT, **popen}
        self.log = VAR / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.command, env=self.env, stdout=self.log.open("a"), stderr=subprocess.STDOUT,
            start_new_session=True,  # a group of its own: SIGKILL takes its children too (gunicorn's worker)
            **self.popen,
        )  # fmt: skip

    def wait_ready(self, timeout: float = 90) -> None:
        if self.ready is None:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not start: {self.log.read_text()[-2000:]}")

    def kill(self, sig: int) -> None:
        """``SIGKILL`` to the whole process group, as the OOM killer of a container; any other signal to the
        process, which shuts down as it does on that signal (gunicorn's master stops its worker)."""
        assert self.process is not None
        if sig == signal.SIGKILL:
            os.killpg(self.process.pid, signal.SIGKILL)
        else:
            self.process.send_signal(sig)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill(signal.SIGKILL)


class Postgres(Process):
    """The PostgreSQL cluster ``bench._postgres.postgres`` started, stopped in immediate mode and started again
    with the command it was started with (``postmaster.opts``), as its own user."""

    def __init__(self, directory: Path) -> None:
        import psycopg

        from tests.services import POSTGRES_USER

        def ready() -> bool:
            try:
                psycopg.connect(host=str(directory), user=POSTGRES_USER, dbname="postgres", connect_timeout=5).close()
                return True
            except psycopg.OperationalError:
                return False

        data = directory / "data"
        command = shlex.split((data / "postmaster.opts").read_text())
        owner = os.stat(data)
        run_as = {"user": owner.st_uid, "group": owner.st_gid, "extra_groups": []} if os.geteuid() == 0 else {}
        super().__init__("postgres", "database", command, dict(os.environ), ready, cwd=directory, **run_as)
        self.data = data

    def kill(self, sig: int) -> None:
        if self.process is not None:
            super().kill(sig)
            return
        # The first time: the cluster's own postmaster, a child of this process (bench._postgres's), reaped here.
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        os.kill(pid, sig)
        os.waitpid(pid, 0)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill(signal.SIGINT)  # fast shutdown; the first postmaster is bench._postgres's to stop


class Stream:
    """What one user reads of one turn's events, across reconnects: whether they came in order to ``turn_end``."""

    def __init__(self, after: int | None) -> None:
        self.last = after  # the last event id the reader has (the ``Last-Event-ID`` it would send)
        self.reconnects = 0
        self.openings = 0  # responses whose opening was read: each took what the stream had after ``last``
        self.ended = False
        self.broken: str | None = None  # why it could not be resumed
        self.started = time.monotonic()

    def read(self, response: Any) -> None:
        """Take a response's events (until it ends or raises): each must be the one after the last."""
        fields: dict[str, str] = {}
        for line in response.iter_lines(decode_unicode=True):
            if line:
                if not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")
                continue
            if "id" in fields:
                seq = int(fields["id"])
                if "event" not in fields:  # the opening: where this response starts
                    self.openings += 1
                    if self.last is not None and seq != self.last and self.broken is None:
                        self.broken = f"resumed at {seq}, not at {self.last}"
                elif self.last is not None and seq != self.last + 1 and self.broken is None:
                    self.broken = f"event {seq} after {self.last}"
                self.last = seq
                if fields.get("event") == "turn_end":
                    self.ended = True
                    return
            fields = {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60, help="how long the load lasts (with counts: at most)")
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--kill-every", type=float, default=2.0, help="mean seconds between two disruptions")
    parser.add_argument("--turns", type=int, default=0, help="go on until this many turns were acknowledged")
    for kind, flag in ((WEB_KILL, "web-kills"), (WORKER_KILL, "worker-kills"), (DEPLOY, "deploys"),
                       (REDIS_RESTART, "redis-restarts"), (POSTGRES_RESTART, "postgres-restarts")):  # fmt: skip
        parser.add_argument(f"--{flag}", type=int, default=0, help=f"{kind}: this many (any count given: each kind "
                            "exactly its count; none: web processes and workers at random)")  # fmt: skip
    parser.add_argument("--latency", type=float, default=0.05, help="seconds each model answer takes")
    parser.add_argument("--tool-latency", type=float, default=0.2, help="seconds the service takes to answer")
    parser.add_argument("--stale-after", type=int, default=4, help="STALE_TURN_TIMEOUT and APPROVAL_RUN_TIMEOUT")
    parser.add_argument("--drain", type=float, default=90, help="at most this long for everything to move on after")
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="postgresql")
    parser.add_argument("--seed", type=int, default=None)
    options = parser.parse_args()
    print(json.dumps(run(options), indent=2))


def run(options: Any) -> dict[str, Any]:  # noqa: C901, PLR0915 - one run, read top to bottom
    chance = random.Random(options.seed)
    started_at = time.monotonic()
    os.environ["TOOLCALLING_CHAOS_STALE_AFTER"] = str(options.stale_after)
    schedule = [kind for kind, count in ((WEB_KILL, options.web_kills), (WORKER_KILL, options.worker_kills),
                (DEPLOY, options.deploys), (REDIS_RESTART, options.redis_restarts),
                (POSTGRES_RESTART, options.postgres_restarts)) for _ in range(count)]  # fmt: skip
    chance.shuffle(schedule)
    if POSTGRES_RESTART in schedule and options.database != "postgresql":
        raise SystemExit("--postgres-restarts needs --database postgresql")
    with ExitStack() as stack:
        from bench._postgres import postgres
        from tests import services

        if options.database == "postgresql":
            stack.enter_context(postgres(VAR))  # before Django reads the settings
        redis_port = services.free_port()
        broker = f"redis://127.0.0.1:{redis_port}"
        # Events in Redis, as in production: a stream a kill cut is resumed from the other web process.
        os.environ["TOOLCALLING_TEST_EVENTS_REDIS_URL"] = f"{broker}/2"
        import django

        django.setup()
        import redis
        import requests
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Permission
        from django.core.management import call_command
        from django.db import close_old_connections, connection

        from bench._chaos_model import chaos_model
        from tests.celery_app import app as celery_app
        from toolcalling import ToolContext, approval
        from toolcalling.models import Conversation, Message, ToolCall
        from toolcalling.streaming._store import EventStore

        call_command("migrate", verbosity=0)
        users = [f"chaos{n}" for n in range(options.users)]
        for name in users:
            get_user_model().objects.create_user(name, password="pw")
        staff = get_user_model().objects.create_user("chaos-staff", password="pw", is_staff=True)
        staff.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
        staff = get_user_model().objects.get(pk=staff.pk)

        def redis_ready() -> bool:
            try:
                return bool(redis.Redis(port=redis_port, socket_connect_timeout=1).ping())
            except redis.RedisError:
                return False

        store = Process("redis", "broker", ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--dir",
                        str(VAR), "--save", "", "--appendonly", "no"], dict(os.environ), redis_ready)  # fmt: skip
        store.start()
        stack.callback(store.stop)
        store.wait_ready()
        base_url = stack.enter_context(chaos_model(options.latency))
        service = Deliveries(options.tool_latency)
        os.environ["TOOLCALLING_CHAOS_SERVICE"] = service.url  # the sweep runs the calls of turns it takes over
        celery_app.conf.update(task_always_eager=False, broker_url=broker, result_backend=broker)
        env = {
            **os.environ,
            "TOOLCALLING_TEST_WORKER": "1",
            "TOOLCALLING_TEST_DB_NAME": str(connection.settings_dict["NAME"]),
            "TOOLCALLING_TEST_BASE_URL": base_url,
            "CELERY_BROKER_URL": broker,
            "CELERY_RESULT_BACKEND": broker,
            "TOOLCALLING_CHAOS_SERVICE": service.url,
        }
        python = sys.executable
        ports = [services.free_port(), services.free_port()]
        bases = [f"http://127.0.0.1:{port}" for port in ports]

        def serving(base: str) -> Callable[[], bool]:
            def ready() -> bool:
                try:
                    requests.get(base, timeout=2)
                    return True
                except requests.RequestException:
                    return False

            return ready

        # A deploy's SIGTERM: each server finishes what it can in 5 s (streams and turns included), then stops.
        web = [
            Process("uvicorn", "web", [python, "-m", "uvicorn", "tests.asgi:application", "--host", "127.0.0.1",
                    "--port", str(ports[0]), "--log-level", "warning", "--timeout-graceful-shutdown", "5"], env,
                    serving(bases[0])),
            Process("gunicorn", "web", [python, "-m", "gunicorn", "tests.wsgi:application", "-b",
                    f"127.0.0.1:{ports[1]}", "-w", "1", "-k", "gthread", "--threads", "8", "--graceful-timeout",
                    "5"], env, serving(bases[1])),
        ]  # fmt: skip
        workers = [
            Process(f"worker{n}", "worker", [python, "-m", "celery", "-A", "tests.celery_app", "worker", "-l",
                    "warning", "--pool=threads", "--concurrency=4", "--without-gossip", "--without-mingle",
                    "-n", f"chaos{n}@%h"], env)
            for n in (1, 2)
        ]  # fmt: skip
        database = Postgres(Path(settings.DATABASES["default"]["HOST"])) if options.database == "postgresql" else None
        if database is not None:
            stack.callback(database.stop)
        for process in [*web, *workers]:
            process.start()
            stack.callback(process.stop)
        for process in [*web, *workers]:
            process.wait_ready()

        load_over = threading.Event()
        began = time.monotonic()
        cap = began + options.seconds
        acknowledged: list[str] = []
        answered: dict[str, str] = {}  # message -> how it was acknowledged (style, status, server, when)
        refused = collections.Counter[str]()
        kills = collections.Counter[str]()
        streams = collections.Counter[str]()
        broken_streams: list[str] = []
        interrupted: dict[Any, tuple[str, float]] = {}  # conversation -> the disruption that interrupted it, when
        moving_again: dict[str, list[float]] = collections.defaultdict(list)
        # When Redis was down, to RETRY_AFTER after it was back (a process that failed to reach the event store
        # leaves it alone that long): events published then are lost by design.
        redis_outages: list[tuple[float, float]] = []
        lock = threading.Lock()

        def tail(conversation: str) -> str:
            """The last events the conversation's stream holds in Redis now (to say why a stream broke)."""
            try:
                entries = redis.Redis(port=redis_port, db=2).xrevrange(f"toolcalling:events:{conversation}", count=4)
            except redis.RedisError as exc:
                return str(exc)
            return ", ".join(f"{i.decode().split('-')[0]} {f[b'type'].decode()}" for i, f in reversed(entries))

        def follow(client: requests.Session, conversation: str, stream: Stream, response: Any | None) -> None:
            """Read the turn's events to its ``turn_end``, resuming with ``Last-Event-ID`` from either web process
            whenever a response ends or breaks first."""
            give_up = time.monotonic() + FOLLOW_AT_MOST
            over = False  # the conversation's turn is over: one more read takes what is left
            while not stream.ended and time.monotonic() < give_up:
                opened = stream.openings
                try:
                    if response is None:
                        stream.reconnects += 1
                        headers = {"Accept": "text/event-stream"}
                        if stream.last is not None:
                            headers["Last-Event-ID"] = str(stream.last)
                        response = client.get(f"{random.choice(bases)}/api/toolcalling/conversations/"  # noqa: S311
                                              f"{conversation}/events/", headers=headers, stream=True,
                                              timeout=(5, 5 if not over else 3))  # fmt: skip
                        if response.status_code != 200:
                            response.close()
                            response = None
                            time.sleep(0.5)
                            continue
                    stream.read(response)
                except (requests.RequestException, ValueError):
                    pass
                finally:
                    if response is not None:
                        response.close()
                    response = None
                if stream.ended or (over and stream.openings > opened):
                    break
                if over:  # the last read did not reach the server (a web process starting again): once more
                    time.sleep(0.5)
                    continue
                try:
                    status = client.get(f"{random.choice(bases)}/api/toolcalling/conversations/{conversation}/",  # noqa: S311
                                        timeout=10).json()["status"]  # fmt: skip
                except (requests.RequestException, ValueError, KeyError):
                    time.sleep(0.5)
                    continue
                over = status in ("idle", "failed")
            with lock:
                streams["followed"] += 1
                if stream.reconnects:
                    streams["resumed with Last-Event-ID at least once"] += 1
                now = time.monotonic()
                across = any(down < now and stream.started < up for down, up in redis_outages)
                if stream.broken is None and not stream.ended:
                    stream.broken = "no turn_end"
                if stream.broken is not None and not across:
                    stream.broken += f" (the stream holds {tail(conversation)})"
                if stream.broken is not None:
                    key = "Redis down or just back during it" if across else "Redis up throughout"
                    streams[f"not resumable, {key}"] += 1
                    if not across:
                        broken_streams.append(
                            f"{conversation}: {stream.broken} (last event {stream.last}, "
                            f"{stream.reconnects} reconnects, at {time.monotonic() - began:.1f})"
                        )

        def user(name: str, style: str) -> None:
            client = requests.Session()
            client.auth = (name, "pw")
            conversation = None
            sent = 0
            while not load_over.is_set():
                base = random.choice(bases)  # noqa: S311
                try:
                    if conversation is None:
                        made = client.post(
                            f"{base}/api/toolcalling/conversations/", json={"assistant": "courier"}, timeout=60
                        )
                        if made.status_code == 201:
                            conversation = made.json()["id"]
                        continue
                    sent += 1
                    content = f"{name} message {sent}"
                    url = f"{base}/api/toolcalling/conversations/{conversation}/messages/"
                    if style == "stream":
                        answer = client.post(url, json={"content": content}, timeout=(5, 60), stream=True,
                                             headers={"Accept": "text/event-stream"})  # fmt: skip
                    else:
                        answer = client.post(url, json={"content": content, "background": style == "background"},
                                             timeout=60)  # fmt: skip
                except requests.RequestException:
                    with lock:
                        refused["connection"] += 1
                    time.sleep(0.3)
                    continue
                with lock:
                    if 200 <= answer.status_code < 300:
                        acknowledged.append(content)
                        answered[content] = f"{style} {answer.status_code} {base} at {time.monotonic() - began:.1f}"
                    else:
                        refused[str(answer.status_code)] += 1
                if answer.status_code >= 300:
                    answer.close()
                    time.sleep(0.5)
                elif style == "stream":
                    follow(client, conversation, Stream(None), answer)
                elif style == "background":
                    stream = Stream(answer.json()["after"])
                    stream.reconnects = -1  # its first read is no reconnect
                    follow(client, conversation, stream, None)
            client.close()

        def disrupt(kind: str) -> None:
            if kind == REDIS_RESTART:
                victim: Process = store
            elif kind == POSTGRES_RESTART:
                assert database is not None
                victim = database
            else:
                victim = chance.choice(workers if kind == WORKER_KILL else web)
            sig = {DEPLOY: signal.SIGTERM, POSTGRES_RESTART: signal.SIGQUIT}.get(kind, signal.SIGKILL)
            now = time.monotonic()
            try:
                close_old_connections()
                running = list(Conversation.objects.filter(status="running").values_list("pk", flat=True))
            except Exception:  # noqa: BLE001 - the database is starting again after the last disruption
                running = []
            with lock:
                for pk in running:
                    interrupted.setdefault(pk, (kind, now))
            if victim is store:
                with lock:
                    redis_outages.append((now, math.inf))
            victim.kill(sig)
            victim.start()
            victim.wait_ready()
            if victim is store:
                with lock:
                    redis_outages[-1] = (now, time.monotonic() + EventStore.RETRY_AFTER)
            with lock:
                kills[kind] += 1
            print(f"{kind} at {now - began:.1f} ({victim.name}, {time.strftime('%H:%M:%S')})", file=sys.stderr,
                  flush=True)  # fmt: skip

        def chaos() -> None:
            random_kinds = not schedule
            while time.monotonic() < cap and (random_kinds or schedule):
                time.sleep(chance.expovariate(1 / options.kill_every))
                if random_kinds:
                    victim = chance.choice([*web, *workers])
                    kind = WORKER_KILL if victim in workers else DEPLOY if chance.random() < 0.2 else WEB_KILL
                else:
                    kind = schedule.pop()
                try:
                    disrupt(kind)
                except Exception as exc:  # noqa: BLE001 - a process slow to start again: said, and counted
                    print("disrupt:", kind, exc, file=sys.stderr)
                    with lock:
                        kills[f"{kind} (not started again in time)"] += 1
            if random_kinds:
                return
            # The size asked for: every disruption done; the load goes on to the turns asked for.
            while time.monotonic() < cap and len(acknowledged) < options.turns:
                time.sleep(1)

        def settle_unknown() -> None:
            """As a staff member would: an unknown outcome is looked up at the service the tool sends to."""
            for call in ToolCall.objects.filter(status="outcome_unknown").select_related("conversation"):
                key = ToolContext(user=None, tool_call=call).idempotency_key
                seen = service.seen(call.name.removeprefix("courier_"), str(key))
                try:
                    approval.settle(call, staff, "succeeded" if seen else "failed", "checked at the service")
                except Exception as exc:  # noqa: BLE001 - decided meanwhile, or the broker is being restarted
                    print("settle:", str(exc).splitlines()[0] if str(exc) else repr(exc), file=sys.stderr)

        def watch_moving() -> None:
            if not interrupted:
                return
            still = set(
                Conversation.objects.filter(status="running", pk__in=list(interrupted)).values_list("pk", flat=True)
            )
            now = time.monotonic()
            with lock:
                for pk in [pk for pk in interrupted if pk not in still]:
                    kind, when = interrupted.pop(pk)
                    moving_again[kind].append(now - when)

        def sweeper(until: threading.Event) -> None:
            while not until.is_set():
                try:
                    close_old_connections()
                    approval.sweep()
                    settle_unknown()
                    watch_moving()
                except Exception as exc:  # noqa: BLE001 - a sweep meeting a dying process tries again next second
                    print("sweep:", str(exc).splitlines()[0] if str(exc) else repr(exc), file=sys.stderr)
                until.wait(1)

        stop_sweeping = threading.Event()
        styles = ["json", "stream", "background"]
        loaders = [threading.Thread(target=user, args=(name, styles[n % 3]), daemon=True)
                   for n, name in enumerate(users)]  # fmt: skip
        chaotic = threading.Thread(target=chaos, daemon=True)
        stack.callback(stop_sweeping.set)  # whatever stops the run stops the sweep (a daemon besides)
        sweeping = threading.Thread(target=sweeper, args=(stop_sweeping,), daemon=True)
        sweeping.start()
        for thread in [*loaders, chaotic]:
            thread.start()
        if schedule:
            chaotic.join()
        else:
            time.sleep(max(0.0, cap - time.monotonic()))
        load_over.set()
        chaotic.join()
        for thread in loaders:
            thread.join()
        load_seconds = time.monotonic() - started_at

        # Let the sweep move on what the last disruptions left behind.
        drain_until = time.monotonic() + options.drain
        busy = ("running", "awaiting_approval")
        while time.monotonic() < drain_until:
            close_old_connections()  # this thread's connection may be one a restart of PostgreSQL broke
            if not Conversation.objects.filter(status__in=busy).exists():
                break
            time.sleep(1)
        stop_sweeping.set()
        sweeping.join()
        close_old_connections()

        stored = set(Message.objects.filter(role="user").values_list("content", flat=True))
        open_statuses = ("running", "approved", "outcome_unknown", "awaiting_approval")
        everything = sorted(t for times in moving_again.values() for t in times)
        lost = [content for content in acknowledged if content not in stored]
        if lost:
            print("acknowledged messages lost:", *(f"{c}: {answered[c]}" for c in lost[:20]), sep="\n  ",
                  file=sys.stderr)  # fmt: skip
        if broken_streams:
            print("streams not resumable with Redis up throughout:", *broken_streams[:20], sep="\n  ", file=sys.stderr)
        return {
            "database": options.database,
            "seconds of load": round(load_seconds),
            "load average (1, 5, 15 min) at the end": os.getloadavg(),
            "turns acknowledged": len(acknowledged),
            "refused (not acknowledged)": dict(refused),
            "kills": dict(kills),
            "disruptions not done (the time ran out)": len(schedule),
            "acknowledged messages lost": len(lost),
            "charges delivered twice (non-idempotent repeated)": service.above_one("charge"),
            "receipt keys delivered more than once (idempotent, dropped by the service)": service.above_one("receipt"),
            "calls whose outcome a person settled": ToolCall.objects.exclude(decided_by=None)
            .filter(requires_approval=False)
            .count(),
            "conversations still running": Conversation.objects.filter(status="running").count(),
            "conversations still waiting": Conversation.objects.filter(status="awaiting_approval").count(),
            "calls without an outcome": ToolCall.objects.filter(status__in=open_statuses).count(),
            "event streams": dict(streams),
            "event streams not resumable, Redis up throughout": streams["not resumable, Redis up throughout"],
            "kill to moving again, p50 s": percentile(everything, 0.5),
            "kill to moving again, p99 s": percentile(everything, 0.99),
            "kill to moving again, per kind (n, p50 s, p99 s)": {
                kind: (len(times), percentile(sorted(times), 0.5), percentile(sorted(times), 0.99))
                for kind, times in sorted(moving_again.items())
            },
        }


def percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    if q == 0.5:
        return round(statistics.median(ordered), 2)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 2)


if __name__ == "__main__":
    main()
