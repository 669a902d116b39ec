"""Helpers of the usage limit and stop tests: posting as a client would, and what a stored history looks like."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.approval.conftest import approver  # noqa: F401  (a staff member who may approve calls)
from tests.history import history_problems  # noqa: F401  (the stored history as its API checks it)
from toolcalling.models import UsageCounter

URL = "/api/toolcalling/conversations/{}/messages/"


def post(api: APIClient, conversation_id: Any, content: str = "hi", **body: Any) -> Any:
    return api.post(URL.format(conversation_id), {"content": content, **body}, format="json")


def used(scope: str, key: Any, period: str = "day") -> dict[str, int]:
    """The current counters of one scope (zeros when nothing was counted yet)."""
    from toolcalling.usage import window

    row = UsageCounter.objects.filter(scope=scope, key=str(key), period=period, period_start=window(period)[0]).first()
    if row is None:
        return {"tokens": 0, "turns": 0, "tool_calls": 0}
    return {"tokens": row.tokens, "turns": row.turns, "tool_calls": row.tool_calls}


@pytest.fixture
def new_conversation(api: APIClient):
    def create(assistant: str = "helper") -> str:
        response = api.post("/api/toolcalling/conversations/", {"assistant": assistant}, format="json")
        assert response.status_code == 201, response.content
        return response.json()["id"]

    return create
