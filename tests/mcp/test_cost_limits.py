"""MCP direct tool calls spend no tokens and no money: a cost limit does not refuse them, even when the
assistant's model has no price; the ``tool_calls`` limits judge and count them as before, and a chat message
with that unpriced model is still refused (``unpriced_model``)."""

import json

import pytest

from toolcalling.models import Conversation, ToolCall, UsageCounter

pytestmark = [pytest.mark.django_db, pytest.mark.database]  # the usage counters' conditional updates

LIMITS = [{"cost": "1.00", "per": "user", "period": "day"}, {"tool_calls": 1, "per": "user", "period": "day"}]


def call(api, name, arguments):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    answer = api.generic("POST", "/api/toolcalling/mcp/helper/", json.dumps(body), content_type="application/json")
    assert answer.status_code == 200, answer.content
    return answer.json()["result"]


@pytest.mark.toolcalling(USAGE_LIMITS=LIMITS)  # the test site's model has no price
def test_a_cost_limit_with_an_unpriced_model_does_not_refuse_a_direct_call(model, api, alice):
    first = call(api, "add", {"a": 1, "b": 2})
    assert first.get("isError", False) is False, first
    assert first["content"][0]["text"] == "3"
    assert list(ToolCall.objects.values_list("name", "status")) == [("add", "succeeded")]

    second = call(api, "add", {"a": 2, "b": 2})  # the tool_calls limit still judges direct calls
    assert second["isError"] is True and "limit" in second["content"][0]["text"]
    assert Conversation.objects.count() == 1  # nothing of the refused call is stored
    counted = UsageCounter.objects.get(scope="user", key=str(alice.pk), period="day")
    assert (counted.tool_calls, counted.turns, counted.tokens, counted.cost, counted.unpriced_replies) == (
        1,
        0,
        0,
        0,
        0,
    )

    conversation = api.post("/api/toolcalling/conversations/", {"assistant": "helper"}, format="json").json()
    refused = api.post(
        f"/api/toolcalling/conversations/{conversation['id']}/messages/", {"content": "hi"}, format="json"
    )
    assert refused.status_code == 503 and refused.json()["code"] == "unpriced_model"  # a model call still is
