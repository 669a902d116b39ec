"""Helpers for the integrity tests: the stored history as the strict server sees it, and the three ways a turn runs."""

from __future__ import annotations

import json
from typing import Any

from rest_framework.test import APIClient

from tests.approval.conftest import approver, approver_api, ops  # noqa: F401  (fixtures these tests share)
from tests.history import history_problems  # noqa: F401  (the stored history as its API checks it)
from toolcalling.models import Message, ToolCall

URL = "/api/toolcalling/conversations/{}/messages/"


def answers_per_call(conversation_id: Any) -> dict[str, int]:
    """How many tool messages answer each call of the conversation."""
    calls = ToolCall.objects.filter(conversation_id=conversation_id)
    return {
        call.call_id: Message.objects.filter(
            conversation_id=conversation_id, role="tool", tool_call_id=call.call_id
        ).count()
        for call in calls
    }


def post_turn(api: APIClient, conversation_id: Any, content: str, mode: str) -> tuple[int, Any]:
    """Run a turn as a client would: ``json`` (the plain POST), ``stream`` (SSE) or ``background`` (202).

    Returns the HTTP status and what came back: the JSON body, or the list of SSE events.
    """
    url = URL.format(conversation_id)
    # JSON with \u escapes, as browsers send it: a lone surrogate in the text arrives as the client wrote it.
    body = {"content": content, "background": mode == "background"}
    headers = {"HTTP_ACCEPT": "text/event-stream"} if mode == "stream" else {}
    response = api.generic("POST", url, json.dumps(body), content_type="application/json", **headers)
    if not getattr(response, "streaming", False):
        return response.status_code, response.json()
    text = b"".join(response.streaming_content).decode()
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    return response.status_code, events
