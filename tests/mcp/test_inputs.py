"""The MCP endpoint against hostile input: each is a JSON-RPC error with a 4xx or an error result, never a 500, and
nothing is stored half; batches are capped, and each of a batch's calls counts for the throttle."""

import json

import pytest
from django.db import connections
from django.test import override_settings
from rest_framework.test import APIClient
from rest_framework.throttling import UserRateThrottle

from toolcalling.mcp._view import MCPView
from toolcalling.models import Conversation, ToolCall, UsageCounter

pytestmark = [pytest.mark.django_db, pytest.mark.database]  # NUL and surrogates stored, and the usage counters

URL = "/api/toolcalling/mcp/helper/"


def deep(levels):
    value = 1
    for _ in range(levels):
        value = [value]
    return value


def rpc(method, params=None, id=1):
    return {"jsonrpc": "2.0", "id": id, "method": method, **({"params": params} if params is not None else {})}


@pytest.fixture(params=[False, True], ids=["autocommit", "atomic_requests"])
def site(request, api):
    """The endpoint with and without ATOMIC_REQUESTS."""
    settings_dict = connections["default"].settings_dict
    saved = settings_dict.get("ATOMIC_REQUESTS", False)
    settings_dict["ATOMIC_REQUESTS"] = request.param
    yield api
    settings_dict["ATOMIC_REQUESTS"] = saved


def post(api, body):
    data = body if isinstance(body, bytes | str) else json.dumps(body)
    return api.generic("POST", URL, data, content_type="application/json")


def test_a_lone_surrogate_in_a_tool_name_is_an_unknown_tool(site):
    answer = post(site, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\ud800","arguments":{}}}')
    assert answer.status_code == 200
    assert answer.json()["error"] == {"code": -32602, "message": "Unknown tool: \ufffd"}
    assert not Conversation.objects.exists()


def test_a_surrogate_and_nul_in_arguments_are_stored_as_replacement_characters(site):
    params = b'{"name":"delete_everything","arguments":{"confirm":"\\udc00\\u0000"}}'
    answer = post(site, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + params + b"}")
    assert answer.status_code == 200 and answer.json()["result"]["structuredContent"]["status"] == "awaiting_approval"
    call = ToolCall.objects.get()
    assert call.arguments == {"confirm": "\ufffd\ufffd"} and call.conversation.status == "awaiting_approval"


@pytest.mark.parametrize("levels", [600, 100_000])
def test_arguments_nested_too_deeply_are_refused_before_anything_is_stored(site, levels):
    body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":'
    answer = post(site, body + "[" * levels + "1" + "]" * levels + ',"b":1}}}')
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] in (-32600, -32700)  # refused as too deep, or as JSON no parser takes
    assert not Conversation.objects.exists()


def test_arguments_a_little_too_deep_are_an_error_result_the_clients_model_reads(site):
    answer = post(site, rpc("tools/call", {"name": "add", "arguments": {"a": deep(35), "b": 1}}))
    result = answer.json()["result"]
    assert answer.status_code == 200 and result["isError"] is True
    assert "nested more than 32 levels deep" in result["content"][0]["text"]
    assert ToolCall.objects.get().status == "failed"


def test_server_discover_with_meta_as_a_list_names_the_supported_versions(site):
    answer = post(site, rpc("server/discover", {"_meta": [1, 2]}))
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == -32022 and "2025-11-25" in answer.json()["error"]["data"]["supported"]


def test_a_form_body_with_a_session_is_refused_as_not_json(alice):
    browser = APIClient(enforce_csrf_checks=True)
    browser.login(username="alice", password="pw")
    browser.get("/admin/login/")  # sets the CSRF cookie
    token = browser.cookies["csrftoken"].value
    answer = browser.post(URL, {"csrfmiddlewaretoken": token, "x": "y"}, format="multipart", HTTP_X_CSRFTOKEN=token)
    assert answer.status_code == 415 and answer.json()["error"]["code"] == -32700


def test_a_batch_over_mcp_max_batch_is_refused_whole(site):
    gated = rpc("tools/call", {"name": "delete_everything", "arguments": {"confirm": "yes"}})
    answer = post(site, [{**gated, "id": n} for n in range(21)])
    assert answer.status_code == 400 and "at most 20" in answer.json()["error"]["message"]
    assert not ToolCall.objects.exists()
    with override_settings(TOOLCALLING={**_settings(), "MCP_MAX_BATCH": 3}):
        assert post(site, [{**gated, "id": n} for n in range(4)]).status_code == 400
        assert [a["id"] for a in post(site, [{**gated, "id": n} for n in range(3)]).json()] == [0, 1, 2]
    assert ToolCall.objects.filter(status="awaiting_approval").count() == 3


class FivePerMinute(UserRateThrottle):
    rate = "5/min"


def test_each_call_of_a_batch_counts_for_the_throttle(api, monkeypatch):
    from django.core.cache import cache

    cache.clear()
    monkeypatch.setattr(MCPView, "throttle_classes", [FivePerMinute])
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    pings = [rpc("ping", id=n) for n in range(4)]
    assert post(api, [*pings, note]).status_code == 200  # four requests (a notification is none)
    assert post(api, rpc("ping")).status_code == 200  # the fifth
    refused = post(api, [rpc("ping", id=7), rpc("ping", id=8)])
    assert refused.status_code == 429 and refused.json()["code"] == "throttled"
    cache.clear()


def _settings():
    from django.conf import settings

    return settings.TOOLCALLING


@pytest.mark.toolcalling(USAGE_LIMITS=[{"tool_calls": 2, "per": "user", "period": "day"}])
def test_each_call_of_a_batch_counts_for_the_usage_limits(model, api, alice):
    batch = [rpc("tools/call", {"name": "add", "arguments": {"a": n, "b": 1}}, id=n) for n in range(3)]
    answers = {a["id"]: a for a in post(api, batch).json()}
    assert [answers[n]["result"].get("isError", False) for n in range(3)] == [False, False, True]
    assert "limit" in answers[2]["result"]["content"][0]["text"]
    assert ToolCall.objects.filter(status="succeeded").count() == 2
    assert Conversation.objects.count() == 2  # the third never ran, and nothing of it is stored
    counted = UsageCounter.objects.get(scope="user", key=str(alice.pk), period="day")
    assert (counted.tool_calls, counted.turns) == (2, 0)  # calls, not messages


def test_direct_calls_are_counted_without_limits_too(model, api, alice):
    post(api, rpc("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}))
    counted = UsageCounter.objects.get(scope="user", key=str(alice.pk), period="day")
    assert (counted.tool_calls, counted.turns, counted.tokens) == (1, 0, 0)


@pytest.mark.toolcalling(USAGE_LIMITS=[{"turns": 1, "per": "user", "period": "day"}])
def test_a_direct_call_is_no_message_so_a_spent_turn_limit_does_not_refuse_it(model, api, alice):
    model.reply("Hello.")
    conversation = api.post("/api/toolcalling/conversations/", {"assistant": "helper"}, format="json").json()
    messages = f"/api/toolcalling/conversations/{conversation['id']}/messages/"
    assert api.post(messages, {"content": "hi"}, format="json").status_code == 201
    assert api.post(messages, {"content": "again"}, format="json").status_code == 429  # the turn limit is spent
    answer = post(api, rpc("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})).json()
    assert answer["result"].get("isError", False) is False
