"""Real services the tests start and stop themselves: redis-server, Celery workers and a shared model server."""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_directory() -> Path:
    """This run's directory for what the tests write (the SQLite files, PostgreSQL's cluster), outside the checkout.

    The first process that asks makes a temporary directory and removes it when it exits; the processes it
    starts (Celery workers, helper scripts) inherit ``TOOLCALLING_TEST_VAR`` and use the same one.
    """
    inherited = os.environ.get("TOOLCALLING_TEST_VAR")
    if inherited:
        return Path(inherited)
    path = tempfile.mkdtemp(prefix="toolcalling-tests-")
    os.environ["TOOLCALLING_TEST_VAR"] = path
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return Path(path)


def on_ci() -> bool:
    """Whether this run is CI's (``CI=true``, as CI services set it), where a missing service is an error."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(message: str) -> None:
    """A service a test needs cannot be had: a failure on CI, where a skip would hide it; a skip elsewhere."""
    import pytest

    if on_ci():
        pytest.fail(f"{message} (CI=true: a missing service fails the run)", pytrace=False)
    pytest.skip(message)


def free_port() -> int:
    """A port nobody listens on now, so parallel test runs on one machine never share a server."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(check: Callable[[], Any], *, timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds (a bound, not a measure)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


class Quiet:
    """A check for ``wait_until`` that holds once ``holds()`` has been true for ``for_seconds`` without a break."""

    def __init__(self, holds: Callable[[], bool], *, for_seconds: float) -> None:
        self.holds = holds
        self.for_seconds = for_seconds
        self.since: float | None = None

    def __call__(self) -> bool:
        if not self.holds():
            self.since = None
            return False
        now = time.monotonic()
        if self.since is None:
            self.since = now
        return now - self.since >= self.for_seconds


@contextmanager
def redis_server(workdir: Path, port: int) -> Iterator[str]:
    """A private redis-server without persistence; yields ``redis://127.0.0.1:<port>``."""
    import redis

    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.path.exists(binary):
        unavailable("redis-server is not installed (apt-get install -y redis-server)")
    log = workdir / "redis.log"
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir)]
        + ["--save", "", "--appendonly", "no", "--daemonize", "no"],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    client = redis.Redis(host="127.0.0.1", port=port)

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"redis-server exited: {log.read_text()}")
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    try:
        wait_until(ready, timeout=20, what="redis-server")
        client.flushall()
        yield f"redis://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


POSTGRES_USER = "toolcalling"  # the cluster's superuser, whoever runs it


def postgres_bindir() -> Path | None:
    """Where ``initdb`` and ``postgres`` are: on PATH, or Debian's /usr/lib/postgresql/<version>/bin (newest)."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("postgres"):
        return Path(initdb).parent
    versions = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/postgres") if p.parent.parent.name.isdigit()]
    return max(versions, key=lambda bindir: int(bindir.parent.name), default=None)


@contextmanager
def postgres_server(directory: Path, *, durable: bool = False, max_connections: int = 200) -> Iterator[Path]:
    """A private PostgreSQL cluster in ``directory`` (made here), reached only through its socket there.

    No TCP port, so parallel runs never meet; no durability (fsync off), since the cluster is thrown
    away, unless ``durable`` (the benchmarks: commits wait for the disk, as on a production server).
    initdb and postgres refuse to run as root: as root they run as the ``postgres`` system user,
    which then owns ``directory``. Yields the socket directory, the ``HOST`` of Django's settings.
    """
    bindir = postgres_bindir()
    if bindir is None:
        unavailable("PostgreSQL is not installed (apt-get install -y postgresql)")
    run_as: dict[str, Any] = {}
    directory.mkdir()
    if os.geteuid() == 0:
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            unavailable("there is no postgres user to run PostgreSQL as (apt-get install -y postgresql)")
        run_as = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
        os.chown(directory, account.pw_uid, account.pw_gid)
        # The postgres user must reach its directory through this run's (root-only) one: traversal, no listing.
        os.chmod(directory.parent, os.stat(directory.parent).st_mode | 0o111)
    data, log = directory / "data", directory / "postgres.log"
    initdb = subprocess.run(
        [str(bindir / "initdb"), "-D", str(data), "-U", POSTGRES_USER, "--auth=trust", "--encoding=UTF8"]
        + ["--no-locale", "--no-sync"],
        cwd=directory,
        capture_output=True,
        text=True,
        **run_as,
    )
    if initdb.returncode != 0:
        raise RuntimeError(f"initdb failed:\n{initdb.stdout}{initdb.stderr}")
    settings = ["listen_addresses="]
    if not durable:
        settings += ["fsync=off", "synchronous_commit=off", "full_page_writes=off"]
    settings += [f"max_connections={max_connections}"]  # live servers, turn threads and Celery workers hold one each
    process = subprocess.Popen(
        [str(bindir / "postgres"), "-D", str(data), "-k", str(directory), *(f"-c{s}" for s in settings)],
        cwd=directory,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        **run_as,
    )

    def ready() -> bool:
        import psycopg

        if process.poll() is not None:
            raise RuntimeError(f"postgres exited: {log.read_text()}")
        try:
            psycopg.connect(host=str(directory), user=POSTGRES_USER, dbname="postgres", connect_timeout=5).close()
            return True
        except psycopg.OperationalError:
            return False

    try:
        wait_until(ready, timeout=60, what="postgres")
        yield directory
    finally:
        process.send_signal(signal.SIGINT)  # fast shutdown: clients are disconnected, nothing is kept
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def drop_celery_connections() -> None:
    """Close this process's broker connections; Celery apps open new ones for their current ``broker_url``.

    An app keeps the connection and producer pools of the broker it published to first (kombu keeps them
    per broker, process-wide): a test that changes ``broker_url`` without this still publishes to the old
    broker, and leaves its own to the tests after it. This is what Celery does after a fork.
    """
    import kombu.pools
    from celery._state import _get_active_apps

    kombu.pools.reset()  # closes every pooled connection and forgets the pools
    for app in list(_get_active_apps()):
        app._pool = None
        amqp = app.__dict__.get("amqp")  # a cached property: absent until first used
        if amqp is not None:
            amqp._producer_pool = None


@contextmanager
def celery_conf(app: Any, **conf: Any) -> Iterator[None]:
    """Run the block with these Celery settings (a broker URL, eager mode ...) and fresh connections,
    then put the settings back and drop the block's connections, whatever happened in it."""
    saved = {key: app.conf[key] for key in conf}
    app.conf.update(conf)
    drop_celery_connections()
    try:
        yield
    finally:
        app.conf.update(saved)
        drop_celery_connections()


class Switchboard:
    """A responder that forwards to the current test's ScriptedModel, so one model server serves a worker
    for many tests (the worker reads its base URL once, at start)."""

    model_name = "scripted-model"

    def __init__(self) -> None:
        from toolcalling.testing import ScriptedModel

        self.current = ScriptedModel()

    def __call__(self, body: dict[str, Any]) -> Any:
        return self.current(body)

    def on_rejected(self, body: Any, errors: list[str]) -> None:
        self.current.on_rejected(body, errors)


@contextmanager
def switchboard_server() -> Iterator[tuple[Switchboard, str]]:
    from toolcalling.testing import OpenAICompatibleServer

    board = Switchboard()
    with OpenAICompatibleServer(board) as server:
        yield board, server.base_url


def start_worker(log: Path, *options: str, db_name: str, base_url: str, env: dict[str, str]) -> subprocess.Popen:
    """A Celery worker process of the test site on pytest-django's test database file and a test model server.

    ``env`` adds the broker (``CELERY_BROKER_URL`` …) and anything else the worker's settings read.
    """
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "TOOLCALLING_TEST_WORKER": "1",
        "TOOLCALLING_TEST_DB_NAME": db_name,
        "TOOLCALLING_TEST_BASE_URL": base_url,
        **env,
    }
    command = [sys.executable, "-m", "celery", "-A", "tests.celery_app", "worker", "-l", "info", *options]
    command += ["--without-gossip", "--without-mingle"]  # workers of a test need not know of each other
    return subprocess.Popen(command, cwd=ROOT, env=environment, stdout=log.open("w"), stderr=subprocess.STDOUT)


def wait_for_worker(process: subprocess.Popen, log: Path) -> None:
    """Until the worker says it is ready (it consumes its queues from then on)."""

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"the Celery worker exited:\n{log.read_text()}")
        return "ready." in log.read_text()

    wait_until(ready, timeout=60, what="the Celery worker")


def stop_worker(process: subprocess.Popen, log: Path) -> None:
    """Warm shutdown (running tasks finish first), killed if it takes longer than 30 s."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
    if os.environ.get("TOOLCALLING_SHOW_WORKER_LOG"):
        sys.stderr.write(log.read_text())


@contextmanager
def running_worker(
    log: Path, *options: str, db_name: str, base_url: str, env: dict[str, str]
) -> Iterator[subprocess.Popen]:
    """A worker as ``start_worker`` starts it, ready when this yields, and stopped (warm shutdown) at the end."""
    process = start_worker(log, *options, db_name=db_name, base_url=base_url, env=env)
    try:
        wait_for_worker(process, log)
        yield process
    finally:
        stop_worker(process, log)


def task_worker_command() -> list[str]:
    """The database task backend's worker (django-tasks-db's ``db_worker``) of the test site, polling often."""
    import importlib.util

    if importlib.util.find_spec("django_tasks_db") is None:
        unavailable("django-tasks-db is not installed (pip install -r requirements/dev.txt)")
    return [sys.executable, "-m", "django", "db_worker", "--interval", "0.05", "--no-startup-delay", "--no-reload"]


def start_task_worker(log: Path, *options: str, db_name: str, base_url: str, env: dict[str, str]) -> subprocess.Popen:
    """A ``db_worker`` process of the test site with ``TOOLCALLING["TASKS"] = "django"``, on pytest-django's test
    database and a test model server (``env`` adds what else its settings read), as ``start_worker`` starts Celery's.
    """
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "TOOLCALLING_TEST_WORKER": "1",
        "TOOLCALLING_TEST_TASKS": "django",
        "TOOLCALLING_TEST_DB_NAME": db_name,
        "TOOLCALLING_TEST_BASE_URL": base_url,
        **env,
    }
    command = [*task_worker_command(), *options]
    return subprocess.Popen(command, cwd=ROOT, env=environment, stdout=log.open("w"), stderr=subprocess.STDOUT)


def wait_for_task_worker(process: subprocess.Popen, log: Path) -> None:
    """Until the worker says it started (it polls its queue from then on)."""

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"the task worker exited:\n{log.read_text()}")
        return "Starting worker" in log.read_text()

    wait_until(ready, timeout=60, what="the task worker")


@contextmanager
def running_task_workers(
    directory: Path, count: int, *, db_name: str, base_url: str, env: dict[str, str]
) -> Iterator[list[subprocess.Popen]]:
    """``count`` task workers (several, so two of them can pick up tasks of one conversation at once), ready when
    this yields, and stopped at the end (SIGTERM: a running task finishes first), each logging to its own file."""
    started: list[tuple[subprocess.Popen, Path]] = []
    try:
        for number in range(count):
            log = directory / f"task-worker-{number}.log"
            started.append((start_task_worker(log, db_name=db_name, base_url=base_url, env=env), log))
        for process, log in started:
            wait_for_task_worker(process, log)
        yield [process for process, _ in started]
    finally:
        for process, log in started:
            stop_worker(process, log)
