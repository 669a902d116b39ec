"""Real services for the approval tests: redis-server, a Celery worker process and a model server both can reach.

The worker is a separate process with its own Django: it opens pytest-django's test database file
and asks the session's model server, whose script each test sets through ``worker_model``.
Tests that need the worker use ``transactional_db`` so their rows are committed where it can see them.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import override_settings
from rest_framework.test import APIClient

from tests import asgi_server, services
from tests.celery_app import app as celery_app
from toolcalling.testing import ScriptedModel

BROKER_URL = settings.CELERY_BROKER_URL
RESULT_BACKEND = settings.CELERY_RESULT_BACKEND
WORKER_ENV = {"CELERY_BROKER_URL": BROKER_URL, "CELERY_RESULT_BACKEND": RESULT_BACKEND}  # this run's broker


@pytest.fixture
def live_server(live_server, request):
    """uvicorn under TOOLCALLING_TEST_SERVER=asgi (``tests/asgi_server.py``), else pytest-django's server."""
    return asgi_server.group_live_server(live_server, request)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The broker of tests/settings.py: a private redis-server on the free port chosen there."""
    with services.redis_server(tmp_path_factory.mktemp("redis"), settings.REDIS_PORT):
        yield BROKER_URL


@pytest.fixture(scope="session")
def model_switchboard() -> Iterator[tuple[services.Switchboard, str]]:
    with services.switchboard_server() as board:
        yield board


def start_worker(base_url: str, log: Path, *options: str) -> subprocess.Popen:
    """A worker of the test site on this run's broker."""
    return services.start_worker(
        log, *options, db_name=str(connection.settings_dict["NAME"]), base_url=base_url, env=WORKER_ENV
    )


@contextmanager
def running_worker(base_url: str, log: Path, *options: str, **env: str) -> Iterator[subprocess.Popen]:
    """A worker as ``start_worker`` starts it (``env`` adds variables), ready until the block ends."""
    db_name = str(connection.settings_dict["NAME"])
    with services.running_worker(log, *options, db_name=db_name, base_url=base_url, env={**WORKER_ENV, **env}) as p:
        yield p


@pytest.fixture(scope="session")
def celery_worker_process(
    redis_server: str,
    model_switchboard: tuple[services.Switchboard, str],
    django_db_setup: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[subprocess.Popen]:
    """One worker for the session, started after the test database exists, stopped at the end."""
    _, base_url = model_switchboard
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    options = ("--pool=threads", "--concurrency=4", "--hostname", "approval-tests@%h")
    with running_worker(base_url, log, *options) as process:
        yield process


@pytest.fixture(scope="module")
def task_worker_processes(
    model_switchboard: tuple[services.Switchboard, str],
    django_db_setup: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[list[subprocess.Popen]]:
    """Two db_worker processes for the module (Django's Tasks, ``TASKS = "django"``), started after the test
    database exists: two, so tasks of one conversation can run at once, as on the Celery worker's threads.

    A module's, not the session's: every group's workers read the one queue table, so the streaming tests' worker
    (its own model server and Redis events) must be the only one left when they run."""
    _, base_url = model_switchboard
    directory = tmp_path_factory.mktemp("task-workers")
    db_name = str(connection.settings_dict["NAME"])
    with services.running_task_workers(directory, 2, db_name=db_name, base_url=base_url, env={}) as processes:
        yield processes


@pytest.fixture
def worker(task_runner: str, request: pytest.FixtureRequest, transactional_db: Any) -> Iterator[Any]:
    """The real worker of the test's runner (``task_runner``), with this process queueing to it instead of running
    tasks eagerly: Celery's through the broker, or under ``"django"`` the db_workers through the database."""
    if task_runner == "django":
        processes = request.getfixturevalue("task_worker_processes")
        with override_settings(TOOLCALLING={**settings.TOOLCALLING, "TASKS": "django"}):
            yield processes
        assert all(p.poll() is None for p in processes), "a task worker died during the test"
        return
    celery_worker_process = request.getfixturevalue("celery_worker_process")
    celery_app.conf.task_always_eager = False
    try:
        yield celery_worker_process
    finally:
        celery_app.conf.task_always_eager = True
    assert celery_worker_process.poll() is None, "the Celery worker died during the test"


@pytest.fixture
def worker_model(worker: Any, model_switchboard: tuple[services.Switchboard, str]) -> Iterator[ScriptedModel]:
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
    client = asgi_server.api_client()
    client.force_authenticate(approver)
    return client


# The ops assistant of each model API (tests marked ``each_api`` run on each).
OPS = {"chat_completions": "ops", "responses": "ops_responses", "anthropic": "ops_anthropic"}


@pytest.fixture
def ops(api: APIClient, model_api: str) -> dict:
    """A conversation of alice's with the ``ops`` assistant (on the Responses API ``ops_responses``, on
    Anthropic's ``ops_anthropic``)."""
    response = api.post("/api/toolcalling/conversations/", {"assistant": OPS[model_api]}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


@contextmanager
def approved_runs_on(queue: str) -> Iterator[None]:
    """Approved runs go to ``queue``, which only the test's own worker consumes; continuations stay on the
    session worker's queue."""

    def reroute() -> None:
        # The app reads task_routes into a router once; build both again from the current setting.
        celery_app.amqp.flush_routes()
        celery_app.amqp.router = celery_app.amqp.Router()

    celery_app.conf.task_routes = {"toolcalling.run_approved_tool_call": {"queue": queue}}
    reroute()
    try:
        yield
    finally:
        celery_app.conf.task_routes = None
        reroute()
