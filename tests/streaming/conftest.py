"""Fixtures for streaming tests: a conversation, and a real redis-server of their own for the event stream."""

import os
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import override_settings

from tests import services
from toolcalling import streaming as events
from toolcalling.models import Conversation

# A private redis-server on a free port (or TOOLCALLING_TEST_EVENTS_REDIS_PORT), so two test runs on
# one machine, or the approval tests' server, never share streams or a broker.
REDIS_PORT = int(os.environ.get("TOOLCALLING_TEST_EVENTS_REDIS_PORT") or services.free_port())
BROKER_URL = f"redis://127.0.0.1:{REDIS_PORT}/0"
EVENTS_URL = f"redis://127.0.0.1:{REDIS_PORT}/1"


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
        assert isinstance(events.get_backend(), events.RedisBackend)
        yield redis_url
