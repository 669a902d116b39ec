"""Real services for the approval tests: redis-server, a Celery worker process and a model server both can reach.

The worker is a separate process with its own Django: it opens pytest-django's test database file
and asks the session's model server, whose script each test sets through ``worker_model``.
Tests that need the worker use ``transactional_db`` so their rows are committed where it can see them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import override_settings
from rest_framework.test import APIClient

from tests.celery_app import app as celery_app
from toolcalling.testing import OpenAICompatibleServer, ScriptedModel

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_PORT = settings.REDIS_PORT
BROKER_URL = settings.CELERY_BROKER_URL
RESULT_BACKEND = settings.CELERY_RESULT_BACKEND
ROOT = Path(__file__).resolve().parents[2]


class Switchboard:
    """A responder that forwards to the current test's ScriptedModel, so one server serves the whole session."""

    model_name = "scripted-model"

    def __init__(self) -> None:
        self.current = ScriptedModel()

    def __call__(self, body: dict[str, Any]) -> Any:
        return self.current(body)

    def on_rejected(self, body: Any, errors: list[str]) -> None:
        self.current.on_rejected(body, errors)


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


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not os.path.exists(REDIS_SERVER):
        pytest.skip("redis-server is not installed (apt-get install -y redis-server)")
    import redis

    workdir = tmp_path_factory.mktemp("redis")
    process = subprocess.Popen(
        [REDIS_SERVER, "--port", str(REDIS_PORT), "--bind", "127.0.0.1", "--dir", str(workdir)]
        + ["--save", "", "--appendonly", "no", "--daemonize", "no"],
        stdout=(workdir / "redis.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    client = redis.Redis(host="127.0.0.1", port=REDIS_PORT)

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"redis-server exited: {(workdir / 'redis.log').read_text()}")
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    try:
        wait_until(ready, timeout=20, what="redis-server")
        client.flushall()
        yield BROKER_URL
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def model_switchboard() -> Iterator[tuple[Switchboard, str]]:
    board = Switchboard()
    with OpenAICompatibleServer(board) as server:
        yield board, server.base_url


def start_worker(base_url: str, log: Path, *options: str) -> subprocess.Popen:
    """A Celery worker process of the test site: the test database file, this run's broker and model server."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "TOOLCALLING_TEST_WORKER": "1",
        "CELERY_BROKER_URL": BROKER_URL,
        "CELERY_RESULT_BACKEND": RESULT_BACKEND,
        "TOOLCALLING_TEST_DB_NAME": str(connection.settings_dict["NAME"]),
        "TOOLCALLING_TEST_BASE_URL": base_url,
    }
    command = [sys.executable, "-m", "celery", "-A", "tests.celery_app", "worker", "-l", "warning", *options]
    command += ["--without-gossip", "--without-mingle"]  # workers of a test need not know of each other
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


def wait_for_worker(process: subprocess.Popen, log: Path, hostname: str) -> None:
    """Until the worker answers a ping by its name (it consumes its queues from then on)."""

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"the Celery worker exited:\n{log.read_text()}")
        return any(hostname in reply for reply in celery_app.control.ping(timeout=0.5) or [])

    wait_until(ready, timeout=60, what=f"the Celery worker {hostname}")


@pytest.fixture(scope="session")
def celery_worker_process(
    redis_server: str,
    model_switchboard: tuple[Switchboard, str],
    django_db_setup: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[subprocess.Popen]:
    """One worker for the session, started after the test database exists, stopped at the end."""
    _, base_url = model_switchboard
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    hostname = f"approval-tests-{os.getpid()}@localhost"
    process = start_worker(base_url, log, "--pool=threads", "--concurrency=4", "--hostname", hostname)
    try:
        wait_for_worker(process, log, hostname)
        yield process
    finally:
        process.send_signal(signal.SIGTERM)  # warm shutdown: running tasks finish first
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if os.environ.get("TOOLCALLING_SHOW_WORKER_LOG"):
            sys.stderr.write(log.read_text())


@pytest.fixture
def worker(celery_worker_process: subprocess.Popen, transactional_db: Any) -> Iterator[subprocess.Popen]:
    """The real worker, with this process sending tasks to the broker instead of running them eagerly."""
    celery_app.conf.task_always_eager = False
    try:
        yield celery_worker_process
    finally:
        celery_app.conf.task_always_eager = True
    assert celery_worker_process.poll() is None, "the Celery worker died during the test"


@pytest.fixture
def worker_model(worker: Any, model_switchboard: tuple[Switchboard, str]) -> Iterator[ScriptedModel]:
    """A scripted model that this process and the worker both talk to over HTTP."""
    board, base_url = model_switchboard
    board.current = scripted = ScriptedModel()
    merged = {**settings.TOOLCALLING, "BASE_URL": base_url, "API_KEY": "test-key", "MAX_RETRIES": 0}
    with override_settings(TOOLCALLING=merged):
        yield scripted
    board.current = ScriptedModel()


@pytest.fixture
def approver(db: Any) -> Any:
    user = get_user_model().objects.create_user("carol", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    return get_user_model().objects.get(pk=user.pk)  # fresh, so the permission cache is empty


@pytest.fixture
def approver_api(approver: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(approver)
    return client


@pytest.fixture
def ops(api: APIClient) -> dict:
    """A conversation of alice's with the ``ops`` assistant."""
    response = api.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()
