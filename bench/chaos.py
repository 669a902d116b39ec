"""A chaos run: a real deployment on this machine, its processes killed at random while users talk to it, and what
that cost counted afterwards.

Run: ``.venv/bin/python bench/chaos.py [--seconds 60] [--users 8] [--database postgresql]``.

The deployment: two web processes (uvicorn and gunicorn) serving the test site, two Celery workers, a private
redis-server as the broker, the site's database (a private PostgreSQL cluster, or SQLite), the strict model server
with latency, and a counting HTTP service that records every delivery per idempotency key. Each user's turn asks
for two tools that send to that service: ``courier_charge`` (not safe to run twice) and ``courier_receipt``
(``idempotent``). While the load runs, a random web process or worker is killed (``SIGKILL``, or ``SIGTERM`` as a
deploy sends) and started again. The sweep runs every second with ``STALE_TURN_TIMEOUT`` of a few seconds, and a
"staff member" settles each call whose outcome is unknown the way a person would: by looking at the service.

Afterwards, once the sweep has had time to move everything on, it reports: acknowledged messages lost, charges
delivered twice (a non-idempotent side effect repeated), receipt keys delivered more than once (which the
service, taking the key, drops), conversations left running or waiting, calls left without an outcome, and the
time from a kill to each conversation it interrupted moving again (p50, p99). Not done yet: restarting Redis and
PostgreSQL, and event streams.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
VAR = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-chaos-")))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")


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
    """One process of the deployment, killed and started again by the chaos."""

    def __init__(self, name: str, kind: str, command: list[str], env: dict[str, str], ready: str | None = None):
        self.name, self.kind, self.command, self.env, self.ready = name, kind, command, env, ready
        self.log = VAR / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.command, cwd=ROOT, env=self.env, stdout=self.log.open("a"), stderr=subprocess.STDOUT,
            start_new_session=True,  # a group of its own: SIGKILL takes its children too (gunicorn's worker)
        )  # fmt: skip

    def wait_ready(self, timeout: float = 60) -> None:
        import requests

        if self.ready is None:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                requests.get(self.ready, timeout=2)
                return
            except requests.RequestException:
                time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not start: {self.log.read_text()[-2000:]}")

    def kill(self, sig: int) -> None:
        """``SIGKILL`` to the whole process group, as the OOM killer of a container; ``SIGTERM`` to the process,
        which shuts down as on a deploy (gunicorn's master stops its worker)."""
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


def main() -> None:  # noqa: PLR0915 - one run, read top to bottom
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60, help="how long the load and the kills last")
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--kill-every", type=float, default=2.0, help="mean seconds between two kills")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds each model answer takes")
    parser.add_argument("--tool-latency", type=float, default=0.2, help="seconds the service takes to answer")
    parser.add_argument("--stale-after", type=int, default=4, help="STALE_TURN_TIMEOUT and APPROVAL_RUN_TIMEOUT")
    parser.add_argument("--drain", type=float, default=90, help="at most this long for everything to move on after")
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="postgresql")
    parser.add_argument("--seed", type=int, default=None)
    options = parser.parse_args()
    print(json.dumps(run(options), indent=2))


def run(options: Any) -> dict[str, Any]:
    chance = random.Random(options.seed)
    os.environ["TOOLCALLING_CHAOS_STALE_AFTER"] = str(options.stale_after)
    with ExitStack() as stack:
        from bench._postgres import postgres
        from tests import services

        if options.database == "postgresql":
            stack.enter_context(postgres(VAR))  # before Django reads the settings
        import django

        django.setup()
        import requests
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Permission
        from django.core.management import call_command
        from django.db import close_old_connections, connection

        from bench._chaos_model import chaos_model
        from tests.celery_app import app as celery_app
        from toolcalling import ToolContext, approval
        from toolcalling.models import Conversation, Message, ToolCall

        call_command("migrate", verbosity=0)
        users = [f"chaos{n}" for n in range(options.users)]
        for name in users:
            get_user_model().objects.create_user(name, password="pw")
        staff = get_user_model().objects.create_user("chaos-staff", password="pw", is_staff=True)
        staff.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
        staff = get_user_model().objects.get(pk=staff.pk)

        broker = stack.enter_context(services.redis_server(VAR, services.free_port()))
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
        web = [
            Process("uvicorn", "web", [python, "-m", "uvicorn", "tests.asgi:application", "--host", "127.0.0.1",
                    "--port", str(ports[0]), "--log-level", "warning"], env, f"http://127.0.0.1:{ports[0]}/"),
            Process("gunicorn", "web", [python, "-m", "gunicorn", "tests.wsgi:application", "-b",
                    f"127.0.0.1:{ports[1]}", "-w", "1", "-k", "gthread", "--threads", "8"], env,
                    f"http://127.0.0.1:{ports[1]}/"),
        ]  # fmt: skip
        workers = [
            Process(f"worker{n}", "worker", [python, "-m", "celery", "-A", "tests.celery_app", "worker", "-l",
                    "warning", "--pool=threads", "--concurrency=4", "--without-gossip", "--without-mingle",
                    "-n", f"chaos{n}@%h"], env)
            for n in (1, 2)
        ]  # fmt: skip
        processes = [*web, *workers]
        for process in processes:
            process.start()
            stack.callback(process.stop)
        for process in processes:
            process.wait_ready()

        deadline = time.monotonic() + options.seconds
        acknowledged: list[str] = []
        refused = collections.Counter[str]()
        kills = collections.Counter[str]()
        interrupted: dict[Any, float] = {}  # conversation -> when the kill that interrupted it happened
        moving_again: list[float] = []
        lock = threading.Lock()

        def user(name: str) -> None:
            client = requests.Session()
            client.auth = (name, "pw")
            conversation = None
            sent = 0
            while time.monotonic() < deadline:
                base = random.choice([f"http://127.0.0.1:{port}" for port in ports])  # noqa: S311
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
                    answer = client.post(f"{base}/api/toolcalling/conversations/{conversation}/messages/",
                                         json={"content": content}, timeout=60)  # fmt: skip
                except requests.RequestException:
                    with lock:
                        refused["connection"] += 1
                    time.sleep(0.3)
                    continue
                with lock:
                    if 200 <= answer.status_code < 300:
                        acknowledged.append(content)
                    else:
                        refused[str(answer.status_code)] += 1
                if answer.status_code >= 300:
                    time.sleep(0.5)
            client.close()

        def chaos() -> None:
            while time.monotonic() < deadline:
                time.sleep(chance.expovariate(1 / options.kill_every))
                victim = chance.choice(processes)
                sig = signal.SIGTERM if chance.random() < 0.2 else signal.SIGKILL
                now = time.monotonic()
                close_old_connections()
                running = list(Conversation.objects.filter(status="running").values_list("pk", flat=True))
                with lock:
                    for pk in running:
                        interrupted.setdefault(pk, now)
                victim.kill(sig)
                kills[f"{victim.kind} {signal.Signals(sig).name}"] += 1
                victim.start()
                victim.wait_ready()

        def settle_unknown() -> None:
            """As a staff member would: an unknown outcome is looked up at the service the tool sends to."""
            for call in ToolCall.objects.filter(status="outcome_unknown").select_related("conversation"):
                key = ToolContext(user=None, tool_call=call).idempotency_key
                seen = service.seen(call.name.removeprefix("courier_"), str(key))
                try:
                    approval.settle(call, staff, "succeeded" if seen else "failed", "checked at the service")
                except Exception as exc:  # noqa: BLE001 - decided meanwhile, or the broker is being restarted
                    print("settle:", exc, file=sys.stderr)

        def watch_moving() -> None:
            if not interrupted:
                return
            still = set(
                Conversation.objects.filter(status="running", pk__in=list(interrupted)).values_list("pk", flat=True)
            )
            now = time.monotonic()
            with lock:
                for pk in [pk for pk in interrupted if pk not in still]:
                    moving_again.append(now - interrupted.pop(pk))

        def sweeper(until: threading.Event) -> None:
            while not until.is_set():
                close_old_connections()
                try:
                    approval.sweep()
                    settle_unknown()
                    watch_moving()
                except Exception as exc:  # noqa: BLE001 - a sweep meeting a dying process tries again next second
                    print("sweep:", exc, file=sys.stderr)
                until.wait(1)

        stop_sweeping = threading.Event()
        threads = [threading.Thread(target=user, args=(name,)) for name in users]
        threads.append(threading.Thread(target=chaos))
        sweeping = threading.Thread(target=sweeper, args=(stop_sweeping,))
        sweeping.start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        # Let the sweep move on what the last kills left behind.
        drain_until = time.monotonic() + options.drain
        busy = ("running", "awaiting_approval")
        while time.monotonic() < drain_until and Conversation.objects.filter(status__in=busy).exists():
            time.sleep(1)
        stop_sweeping.set()
        sweeping.join()

        stored = set(Message.objects.filter(role="user").values_list("content", flat=True))
        open_statuses = ("running", "approved", "outcome_unknown", "awaiting_approval")
        moving_again.sort()
        return {
            "database": options.database,
            "seconds": options.seconds,
            "turns acknowledged": len(acknowledged),
            "refused (not acknowledged)": dict(refused),
            "kills": dict(kills),
            "acknowledged messages lost": sum(1 for content in acknowledged if content not in stored),
            "charges delivered twice (non-idempotent repeated)": service.above_one("charge"),
            "receipt keys delivered more than once (idempotent, dropped by the service)": service.above_one("receipt"),
            "calls whose outcome a person settled": ToolCall.objects.exclude(decided_by=None)
            .filter(requires_approval=False)
            .count(),
            "conversations still running": Conversation.objects.filter(status="running").count(),
            "conversations still waiting": Conversation.objects.filter(status="awaiting_approval").count(),
            "calls without an outcome": ToolCall.objects.filter(status__in=open_statuses).count(),
            "kill to moving again, p50 s": round(statistics.median(moving_again), 2) if moving_again else None,
            "kill to moving again, p99 s": round(moving_again[int(len(moving_again) * 0.99)], 2)
            if moving_again
            else None,
        }


if __name__ == "__main__":
    main()
