"""The AI SDK's own chat client run by node against the live test site, and the fixtures its tests share.

``tests/frontends/js`` pins the ``ai`` package (package-lock.json); ``npm ci`` installs it there, as ``make test``
does. Without node, or without the package installed, the tests fail under ``CI=true`` and skip elsewhere.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings

from tests import services
from tests.celery_app import app as celery_app
from tests.streaming.test_asgi_stream import asgi_url  # noqa: F401  (the test site under uvicorn)
from toolcalling import streaming
from toolcalling.models import Conversation
from toolcalling.streaming._redis import RedisBackend
from toolcalling.testing import ScriptedModel

JS = Path(__file__).parent / "js"
TIMEOUT = 60  # seconds one command of the driver may take: a bound, not a measure
# A redis-server of this directory's own (broker and event stream), so no other directory's tests share it.
REDIS_PORT = int(os.environ.get("TOOLCALLING_TEST_FRONTENDS_REDIS_PORT") or services.free_port())
BROKER_URL = f"redis://127.0.0.1:{REDIS_PORT}/0"
EVENTS_URL = f"redis://127.0.0.1:{REDIS_PORT}/1"


class Driver:
    """One node process running ``driver.mjs``: a chat of the SDK, commanded line by line."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.statuses: list[str] = []
        self.opened: dict[str, Any] = {}  # the reply to ``open``: the messages the chat starts with
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def start(self, op: str, **args: Any) -> None:
        """Send a command without waiting for its reply (see ``reply``)."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.process.stdin.flush()

    def reply(self, *, status: str | None = None) -> dict[str, Any]:
        """The next reply; with ``status``, return as soon as the chat reports that status instead."""
        while True:
            try:
                line = self.lines.get(timeout=TIMEOUT)
            except queue.Empty:
                raise AssertionError(f"the AI SDK driver did not answer within {TIMEOUT} s") from None
            if line is None:
                stderr = self.process.stderr.read() if self.process.stderr else ""
                raise AssertionError(f"the AI SDK driver exited: {stderr}")
            if "event" in line:
                self.statuses.append(line["status"])
                if status is not None and line["status"] == status:
                    return line
                continue
            reply = line["reply"]
            assert "thrown" not in reply, reply["thrown"]
            return reply

    def __call__(self, op: str, **args: Any) -> dict[str, Any]:
        self.start(op, **args)
        return self.reply()


@pytest.fixture(scope="session")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        services.unavailable("node is not installed (scripts/system-packages.sh installs it)")
    if not (JS / "node_modules" / "ai" / "package.json").exists():
        services.unavailable(f"the ai package is not installed: npm ci --prefix {JS}")
    return str(found)


@pytest.fixture
def chat(node, live_server, alice) -> Iterator[Any]:
    """``chat(conversation)``: an SDK chat whose id is that conversation's, signed in as alice, on the live server
    (or on ``base=``, another server of the test site)."""
    drivers: list[Driver] = []

    def open_chat(
        conversation: Conversation, *, user: str = "alice", auto: bool = False, base: str = "", history: bool = False
    ) -> Driver:
        process = subprocess.Popen(
            [node, str(JS / "driver.mjs")], cwd=JS, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        driver = Driver(process)
        drivers.append(driver)
        api = f"{base or live_server.url}/api/toolcalling/ai-sdk/chat"
        driver.opened = driver("open", api=api, id=str(conversation.pk), user=user, password="pw", auto=auto,
                               history=history)  # fmt: skip
        return driver

    yield open_chat
    for driver in drivers:
        assert driver.process.stdin is not None
        driver.process.stdin.close()
        try:
            driver.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            driver.process.kill()
            driver.process.wait()


@pytest.fixture
def conv(alice) -> Conversation:
    return Conversation.objects.create(user=alice, assistant_id="helper")


def parts(reply: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The parts of one type (``text``, ``tool-add``, ...) of the chat's assistant messages, in order."""
    return [p for m in reply["messages"] if m["role"] == "assistant" for p in m["parts"] if p["type"] == kind]


def chunk_types(reply: dict[str, Any]) -> list[str]:
    return [c["type"] for c in reply["chunks"]]


# A real Celery worker, for staff decisions: its events reach this process's readers through Redis.


@pytest.fixture(scope="module")
def worker_process(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[tuple[services.Switchboard, str]]:
    """A redis-server, a model server both processes ask, and a worker of the test site on them."""
    with django_db_blocker.unblock():
        db_name = str(connection.settings_dict["NAME"])
    with services.redis_server(tmp_path_factory.mktemp("redis-frontends"), REDIS_PORT):
        with services.switchboard_server() as (board, base_url):
            log = tmp_path_factory.mktemp("frontends-worker") / "worker.log"
            env = {"CELERY_BROKER_URL": BROKER_URL, "CELERY_RESULT_BACKEND": BROKER_URL,
                   "TOOLCALLING_TEST_EVENTS_REDIS_URL": EVENTS_URL}  # fmt: skip
            options = ("--pool=threads", "--concurrency=2", "--hostname", "frontends-tests@%h")
            with services.running_worker(log, *options, db_name=db_name, base_url=base_url, env=env):
                yield board, base_url


@pytest.fixture
def on_worker(worker_process, transactional_db) -> Iterator[ScriptedModel]:
    """Tasks go to the worker, events to the shared Redis; this process and the worker ask one scripted model."""
    board, base_url = worker_process
    board.current = scripted = ScriptedModel()
    merged = {**settings.TOOLCALLING, "BASE_URL": base_url, "API_KEY": "test-key", "MAX_RETRIES": 0,
              "EVENTS_REDIS_URL": EVENTS_URL, "EVENTS_KEEPALIVE": 0.5}  # fmt: skip
    try:
        with services.celery_conf(celery_app, task_always_eager=False, broker_url=BROKER_URL):
            with override_settings(TOOLCALLING=merged):
                assert isinstance(streaming.get_backend(), RedisBackend)
                yield scripted
    finally:
        board.current = ScriptedModel()
