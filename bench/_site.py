"""The test site served over HTTP by uvicorn or gunicorn in a process of its own, for the benchmarks that load it.

``with site(base_url) as served:`` starts the server on a free port with the bench model at ``base_url`` and this
process's database (``django.setup()`` first), and yields it once it answers: ``served.base`` is its root URL,
``cpu_seconds(served.pid)`` the CPU its processes have used. The benchmarks authenticate with basic auth as a user
they make (``AUTH``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from tests import services

ROOT = Path(__file__).resolve().parent.parent
AUTH = ("bench", "bench-pass")
SSE = {"Accept": "text/event-stream"}
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Site:
    base: str  # the root URL
    pid: int  # the server's first process (uvicorn's or gunicorn's supervisor of its workers)


def server_command(server: str, port: int, *, workers: int, threads: int, keep_alive: int) -> list[str]:
    """``uvicorn`` (ASGI) or ``gunicorn`` (WSGI: the threaded ``gthread`` worker with ``threads`` above 1, else
    gunicorn's default sync worker, one request at a time)."""
    if server == "uvicorn":
        return [sys.executable, "-m", "uvicorn", "tests.asgi:application", "--port", str(port), "--workers",
                str(workers), "--log-level", "warning", "--timeout-keep-alive", str(keep_alive)]  # fmt: skip
    if server == "gunicorn":
        worker_class = "gthread" if threads > 1 else "sync"
        # --timeout: a worker busy with one long streamed turn is not stuck.
        return [sys.executable, "-m", "gunicorn", "tests.wsgi:application", "--bind", f"127.0.0.1:{port}",
                "--workers", str(workers), "--threads", str(threads), "--worker-class", worker_class,
                "--keep-alive", str(keep_alive), "--timeout", "900", "--log-level", "warning"]  # fmt: skip
    raise ValueError(f"no such server: {server!r} (uvicorn or gunicorn)")


@contextmanager
def site(
    base_url: str, server: str = "uvicorn", *, workers: int = 1, threads: int = 1, keep_alive: int = 300
) -> Iterator[Site]:
    """The test site under ``server``, its model at ``base_url``, once it answers."""
    from django.db import connection

    port = services.free_port()
    env = {**os.environ, "TOOLCALLING_TEST_WORKER": "1", "TOOLCALLING_TEST_BASE_URL": base_url,
           "TOOLCALLING_TEST_DB_NAME": str(connection.settings_dict["NAME"])}  # fmt: skip
    if server == "uvicorn":
        # Django runs each ASGI request's sync code in a thread of its own, so a persistent connection outlives
        # its thread unclosed (hundreds open under load); Django's docs say to switch them off under ASGI.
        env["TOOLCALLING_TEST_CONN_MAX_AGE"] = "0"
        # On PostgreSQL, Django's connection pool instead, as the deployment guide says to run under ASGI: a
        # connection per request cost PostgreSQL 18 ms of CPU a turn, the pool 8. TOOLCALLING_TEST_PG_POOL=""
        # measures without it.
        env.setdefault("TOOLCALLING_TEST_PG_POOL", "40")
    command = server_command(server, port, workers=workers, threads=threads, keep_alive=keep_alive)
    process = subprocess.Popen(command, env=env, cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        services.wait_until(lambda: _up(base, process), timeout=60, what=server)
        yield Site(base, process.pid)
    finally:
        process.terminate()
        process.wait(30)


def _up(base: str, process: subprocess.Popen) -> bool:
    if process.poll() is not None:
        raise RuntimeError(f"the site's server exited with {process.returncode}")
    try:
        return httpx2.get(f"{base}/api/toolcalling/assistants/", auth=AUTH, timeout=2).status_code == 200
    except httpx2.HTTPError:
        return False


def cpu_seconds(root: int) -> float:
    """CPU seconds (user and system) used so far by process ``root`` and its descendants, the exited ones too
    once their parent has reaped them (as a supervisor does its workers, PostgreSQL its backends)."""
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # from the state on: the name may hold spaces
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = sum(int(f) for f in fields[11:15]) / TICKS  # utime stime cutime cstime
    tree = {root}
    while more := {pid for pid, parent in parents.items() if parent in tree} - tree:
        tree |= more
    return sum(used.get(pid, 0.0) for pid in tree)
