"""Fixtures for streaming tests: a conversation, and a real redis-server on port 6392 for the event stream."""

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import override_settings

from toolcalling import events
from toolcalling.models import Conversation


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# A private redis-server on a free port (or TOOLCALLING_TEST_EVENTS_REDIS_PORT), so two test runs on
# one machine, or the approval tests' server, never share streams or a broker.
REDIS_PORT = int(os.environ.get("TOOLCALLING_TEST_EVENTS_REDIS_PORT") or _free_port())
BROKER_URL = f"redis://127.0.0.1:{REDIS_PORT}/0"
EVENTS_URL = f"redis://127.0.0.1:{REDIS_PORT}/1"


@pytest.fixture
def conv(alice) -> Conversation:
    return Conversation.objects.create(user=alice, assistant_id="helper")


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory) -> Iterator[str]:
    """A redis-server of its own for the session; the event stream uses its database 1."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install -y redis-server)")
    import redis

    workdir = tmp_path_factory.mktemp("redis-events")
    process = subprocess.Popen(
        [binary, "--port", str(REDIS_PORT), "--bind", "127.0.0.1", "--dir", str(workdir), "--save", ""]
        + ["--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    client = redis.Redis.from_url(EVENTS_URL)
    deadline = time.monotonic() + 20
    while True:
        try:
            client.ping()
            assert process.poll() is None, f"port {REDIS_PORT} is taken by another redis-server"
            break
        except redis.ConnectionError:
            assert process.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
    client.flushall()
    try:
        yield EVENTS_URL
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture
def redis_events(redis_url, model, monkeypatch) -> Iterator[str]:
    """This process's events go to Redis, as with ``REDIS_URL`` set on a real site."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    # None, the default: the URL comes from REDIS_URL. Overriding re-reads the settings and rebuilds the backend.
    with override_settings(TOOLCALLING={**settings.TOOLCALLING, "EVENTS_REDIS_URL": None}):
        assert isinstance(events.get_backend(), events.RedisBackend)
        yield redis_url
