"""Fixtures for streaming tests: a conversation of alice's made through the ORM (live servers share the DB)."""

import pytest

from toolcalling.models import Conversation


@pytest.fixture
def conv(alice) -> Conversation:
    return Conversation.objects.create(user=alice, assistant_id="helper")
