"""Fixtures for streaming tests: a conversation, a real redis-server of their own for the event stream, and a
real worker (Celery's, or a db_worker of Django's Tasks) whose events reach this process through it."""

import os
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings

from tests import asgi_server, services
from tests.celery_app import app as celery_app
from toolcalling import streaming as events
from toolcalling.models import Conversation
from toolcalling.streaming._redis import RedisBackend
from toolcalling.testing import ScriptedModel

# A private redis-server on a free port (or TOOLCALLING_TEST_EVENTS_REDIS_PORT), so two test runs on
# one machine, or the approval tests' server, never share streams or a broker.
REDIS_PORT = int(os.environ.get("TOOLCALLING_TEST_EVENTS_REDIS_PORT") or services.free_port())
BROKER_URL = f"redis://127.0.0.1:{REDIS_PORT}/0"
EVENTS_URL = f"redis://127.0.0.1:{REDIS_PORT}/1"


@pytest.fixture
def live_server(live_server, request):
    """uvicorn under TOOLCALLING_TEST_SERVER=asgi (``tests/asgi_server.py``), else pytest-django's server."""
    return asgi_server.group_live_server(live_server, request)


@pytest.fixture
def conv(alice) -> Conversation:
    return Conversation.objects.create(user=alice, assistant_id="helper")


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory) -> Iterator[str]:
    """A redis-server of its own for the session; the event stream uses its database 1."""
    with services.redis_server(tmp_path_factory.mktemp("redis-events"), REDIS_PORT):
        yield EVENTS_URL


@pytest.fixture
def redis_events(redis_url, model, monkeypatch) -> Iterator[str]:
    """This process's events go to Redis, as with ``REDIS_URL`` set on a real site."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    # None, the default: the URL comes from REDIS_URL. Overriding re-reads the settings and rebuilds the backend.
    with override_settings(TOOLCALLING={**settings.TOOLCALLING, "EVENTS_REDIS_URL": None}):
        assert isinstance(events.get_backend(), RedisBackend)
        yield redis_url


# A worker per test module that asks for one (module scope): it starts once and serves that module's tests.


@pytest.fixture(scope="module")
def board() -> Iterator[tuple[services.Switchboard, str]]:
    with services.switchboard_server() as switchboard:
        yield switchboard


@pytest.fixture(scope="module")
def worker_process(redis_url, board, django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[None]:
    """A Celery worker of the test site on its own broker, its events going to the same Redis."""
    log = tmp_path_factory.mktemp("stream-worker") / "worker.log"
    with django_db_blocker.unblock():
        db_name = str(connection.settings_dict["NAME"])
    env = {
        "CELERY_BROKER_URL": BROKER_URL,
        "CELERY_RESULT_BACKEND": BROKER_URL,
        "TOOLCALLING_TEST_EVENTS_REDIS_URL": redis_url,
    }
    options = ("--pool=threads", "--concurrency=2", "--hostname", "streaming-tests@%h")
    with services.running_worker(log, *options, db_name=db_name, base_url=board[1], env=env):
        yield


@pytest.fixture(scope="module")
def task_worker_processes(redis_url, board, django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[None]:
    """A db_worker of the test site (Django's Tasks, ``TASKS = "django"``), its events going to the same Redis."""
    directory = tmp_path_factory.mktemp("stream-task-worker")
    with django_db_blocker.unblock():
        db_name = str(connection.settings_dict["NAME"])
    env = {"TOOLCALLING_TEST_EVENTS_REDIS_URL": redis_url}
    with services.running_task_workers(directory, 1, db_name=db_name, base_url=board[1], env=env):
        yield


@pytest.fixture
def on_worker(task_runner, request, board, redis_events, transactional_db) -> Iterator[ScriptedModel]:
    """Tasks go to the worker of the test's runner (``task_runner``); this process and the worker ask the same
    scripted model."""
    switchboard, base_url = board
    switchboard.current = scripted = ScriptedModel()
    merged = {**settings.TOOLCALLING, "BASE_URL": base_url, "API_KEY": "test-key", "MAX_RETRIES": 0}
    merged["EVENTS_KEEPALIVE"] = 0.5  # streams whose reader left notice it soon, before Redis stops
    try:
        if task_runner == "django":
            request.getfixturevalue("task_worker_processes")
            with override_settings(TOOLCALLING={**merged, "TASKS": "django"}):
                yield scripted
            return
        request.getfixturevalue("worker_process")
        with services.celery_conf(celery_app, task_always_eager=False, broker_url=BROKER_URL):
            with override_settings(TOOLCALLING=merged):
                yield scripted
    finally:
        switchboard.current = ScriptedModel()
