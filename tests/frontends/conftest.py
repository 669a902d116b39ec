"""The AI SDK's own chat client run by node against the live test site, and the fixtures its tests share.

``tests/frontends/js`` pins the ``ai`` package (package-lock.json); ``npm ci`` installs it there, as ``make test``
does. Without node, or without the package installed, the tests fail under ``CI=true`` and skip elsewhere.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import services
from toolcalling.models import Conversation

JS = Path(__file__).parent / "js"
TIMEOUT = 60  # seconds one command of the driver may take: a bound, not a measure


class Driver:
    """One node process running ``driver.mjs``: a chat of the SDK, commanded line by line."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.statuses: list[str] = []
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
    """``chat(conversation)``: an SDK chat whose id is that conversation's, signed in as alice."""
    drivers: list[Driver] = []

    def open_chat(conversation: Conversation, *, user: str = "alice", auto: bool = False) -> Driver:
        process = subprocess.Popen(
            [node, str(JS / "driver.mjs")], cwd=JS, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        driver = Driver(process)
        drivers.append(driver)
        api = f"{live_server.url}/api/toolcalling/ai-sdk/chat"
        driver("open", api=api, id=str(conversation.pk), user=user, password="pw", auto=auto)
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
