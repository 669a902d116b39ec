"""Shared fixtures: users, an API client, and a strict scripted model served over HTTP."""

from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.celery_app import app as celery_app  # noqa: F401  (binds the app's shared tasks to the test site)
from toolcalling.testing import ScriptedModel
from toolcalling.testutils import override_model


def pytest_configure(config):
    config.addinivalue_line("markers", "toolcalling(**settings): TOOLCALLING keys for the model fixture")


@pytest.fixture
def model(db, request) -> Iterator[ScriptedModel]:
    """A scripted model on a strict local server; ``@pytest.mark.toolcalling(KEY=value)`` adds settings."""
    marker = request.node.get_closest_marker("toolcalling")
    with override_model(**(marker.kwargs if marker else {})) as scripted:
        yield scripted


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", password="pw")


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", password="pw")


@pytest.fixture
def api(alice) -> APIClient:
    client = APIClient()
    client.force_authenticate(alice)
    return client


@pytest.fixture
def conversation(api) -> dict:
    response = api.post("/api/toolcalling/conversations/", {"assistant": "helper"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()
