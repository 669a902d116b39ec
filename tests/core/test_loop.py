"""The loop through the API against the strict server: calls, results, errors, limits, return-direct."""

import json

import pytest

from tests.history import history_problems
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.testing.bodies import chat_messages
from toolcalling.testutils import override_toolcalling

pytestmark = pytest.mark.each_api


def post(api, conversation, content="hi"):
    return api.post(
        f"/api/toolcalling/conversations/{conversation['id']}/messages/", {"content": content}, format="json"
    )


def tool_messages(request_body):
    return [m for m in chat_messages(request_body) if m["role"] == "tool"]


def assert_stored_history_valid(conversation_id):
    """The stored history, as the conversation's model API would send it next, is one that API accepts."""
    assert history_problems(conversation_id) == []


def test_calls_run_in_order_and_results_go_back_as_tool_messages(api, conversation, model):
    model.calls(("add", {"a": 2, "b": 3}), ("whoami", {}))
    model.reply("2 + 3 = 5, and you are alice.")
    response = post(api, conversation, "What is 2 + 3, and who am I?")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "idle"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [c["name"] for c in body["messages"][1]["tool_calls"]] == ["add", "whoami"]
    assert body["messages"][-1]["content"] == "2 + 3 = 5, and you are alice."
    first, second = model.requests
    offered = set(model.tools(0))
    assert offered >= {"add", "whoami", "ship"}
    assert set(model.tools(1)) == offered  # definitions sent on every call
    results = tool_messages(second)
    assert [r["content"] for r in results] == ["5", '{"username":"alice","tenant":"acme"}']
    assert [r["tool_call_id"] for r in results] == [c["id"] for c in chat_messages(second)[-3]["tool_calls"]]
    calls = ToolCall.objects.order_by("index")
    assert [(c.name, c.status, c.arguments) for c in calls] == [
        ("add", "succeeded", {"a": 2, "b": 3}),
        ("whoami", "succeeded", {}),
    ]
    assert all(c.duration_ms is not None for c in calls)
    assert_stored_history_valid(conversation["id"])


def test_earlier_turns_are_sent_with_their_tool_calls(api, conversation, model):
    model.call("add", {"a": 1, "b": 1})
    model.reply("2")
    post(api, conversation, "1+1")
    model.reply("You asked 1+1.")
    post(api, conversation, "What did I ask?")
    roles = [m["role"] for m in model.messages(-1)]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert model.messages(-1)[0]["content"] == "You are a test helper."


def test_context_comes_from_the_server_and_the_model_cannot_set_it(api, conversation, model):
    model.call("whoami", {"ctx": {"user": "admin"}})
    model.reply("Sorry.")
    post(api, conversation, "Pretend to be admin")
    call = ToolCall.objects.get()
    assert call.status == "failed"
    assert "ctx: unexpected argument" in call.result
    assert "ctx: unexpected argument" in tool_messages(model.requests[1])[0]["content"]


def test_tool_errors_unknown_tools_and_invalid_arguments_go_back_to_the_model(api, conversation, model):
    model.calls(("explode", {}), ("nonexistent", {}), ("add", {"a": "x"}), ("add", '{"a": 1,'))
    model.reply("Something went wrong.")
    response = post(api, conversation, "Try things")
    assert response.status_code == 201
    results = [m["content"] for m in tool_messages(model.requests[1])]
    assert results[0] == "Error: RuntimeError: boom"
    assert "no tool named 'nonexistent'" in results[1] and "Available tools:" in results[1]
    assert "invalid arguments for add" in results[2] and "a: Input should be a valid integer" in results[2]
    assert "b: Field required" in results[2]
    assert "not valid JSON" in results[3]
    assert list(ToolCall.objects.values_list("status", flat=True)) == ["failed"] * 4
    assert ToolCall.objects.filter(name="explode").get().error == "RuntimeError: boom"
    assert_stored_history_valid(conversation["id"])


@pytest.mark.toolcalling(TOOL_ERRORS="raise")
def test_tool_errors_raise_ends_the_turn_and_keeps_history_valid(api, conversation, model):
    model.calls(("explode", {}), ("add", {"a": 1, "b": 2}))
    response = post(api, conversation, "Explode")
    assert response.status_code == 422
    assert response.json()["code"] == "tool_error"
    assert "boom" in response.json()["detail"]
    conv = Conversation.objects.get(pk=conversation["id"])
    assert conv.status == "failed" and "boom" in conv.error
    assert ToolCall.objects.get(name="add").status == "cancelled"  # answered, never run
    assert_stored_history_valid(conversation["id"])
    model.reply("Fine now.")
    assert post(api, conversation, "again").json()["status"] == "idle"


def test_return_direct_answers_without_asking_the_model_again(api, conversation, model):
    model.call("direct_answer", {"text": "hello"})
    body = post(api, conversation, "Say hello directly").json()
    assert len(model.requests) == 1
    assert body["messages"][-1]["role"] == "assistant"
    assert body["messages"][-1]["content"] == "DIRECT: hello"
    assert_stored_history_valid(conversation["id"])


def test_return_direct_mixed_with_a_normal_call_asks_the_model(api, conversation, model):
    model.calls(("direct_answer", {"text": "a"}), ("add", {"a": 1, "b": 2}))
    model.reply("Both done.")
    body = post(api, conversation).json()
    assert len(model.requests) == 2
    assert body["messages"][-1]["content"] == "Both done."


@pytest.mark.toolcalling(MAX_CALLS_PER_TOOL=2, ON_LIMIT_EXCEEDED="return_error")
def test_per_tool_limit_return_error_lets_the_model_continue(api, conversation, model):
    model.calls(("add", {"a": 1, "b": 1}), ("add", {"a": 2, "b": 2}), ("add", {"a": 3, "b": 3}))
    model.reply("Done.")
    body = post(api, conversation).json()
    assert body["status"] == "idle"
    results = [m["content"] for m in tool_messages(model.requests[1])]
    assert results[:2] == ["2", "4"]
    assert "limit is at most 2 calls to 'add' per turn" in results[2]
    refused = ToolCall.objects.filter(status="failed").get()
    assert refused.error == "not run, the limit is at most 2 calls to 'add' per turn"  # why, as every failure says
    # The limit counts the current turn only.
    model.calls(("add", {"a": 5, "b": 5}), ("add", {"a": 6, "b": 6}))
    model.reply("Again.")
    post(api, conversation, "next turn")
    assert [m["content"] for m in tool_messages(model.requests[3])][-2:] == ["10", "12"]


@pytest.mark.toolcalling(MAX_TOTAL_TOOL_CALLS=2, ON_LIMIT_EXCEEDED="raise")
def test_total_limit_raise_ends_the_turn_and_keeps_completed_calls(api, conversation, model):
    model.call("add", {"a": 1, "b": 1})
    model.calls(("whoami", {}), ("add", {"a": 2, "b": 2}))
    response = post(api, conversation)
    assert response.status_code == 422
    assert response.json()["code"] == "tool_call_limit_exceeded"
    assert "at most 2 tool calls per turn" in response.json()["detail"]
    statuses = dict(ToolCall.objects.values_list("name", "status").order_by("id"))
    assert list(ToolCall.objects.order_by("id").values_list("status", flat=True)) == [
        "succeeded",
        "succeeded",
        "cancelled",
    ]
    assert statuses["whoami"] == "succeeded"
    assert Conversation.objects.get(pk=conversation["id"]).status == "failed"
    assert_stored_history_valid(conversation["id"])


def test_tools_without_permission_are_not_offered(api, conversation, model, alice):
    from django.contrib.auth.models import Permission

    model.reply("ok")
    post(api, conversation)
    assert "list_users" not in model.tools(0)
    alice.user_permissions.add(Permission.objects.get(codename="view_user"))
    api.force_authenticate(type(alice).objects.get(pk=alice.pk))  # a new request loads permissions afresh
    model.reply("ok")
    post(api, conversation)
    assert "list_users" in model.tools(1)


def test_a_tool_the_user_may_not_use_cannot_be_called_by_name(api, conversation, model):
    model.call("list_users", {})
    model.reply("no")
    post(api, conversation)
    assert ToolCall.objects.get().status == "failed"
    assert "no tool named 'list_users'" in tool_messages(model.requests[1])[0]["content"]


def test_token_usage_is_recorded_per_message_and_conversation(api, conversation, model):
    model.call("add", {"a": 1, "b": 2}, usage=(100, 7))
    model.reply("3", usage=(120, 3))
    post(api, conversation)
    conv = Conversation.objects.get(pk=conversation["id"])
    assert (conv.prompt_tokens, conv.completion_tokens, conv.total_tokens) == (220, 10, 230)
    usages = list(Message.objects.filter(role="assistant").values_list("prompt_tokens", "completion_tokens"))
    assert usages == [(100, 7), (120, 3)]


@pytest.mark.parametrize("status,code", [(500, 502), (429, 502), (503, 502)])
def test_model_endpoint_failure_keeps_the_message_and_the_next_one_works(api, conversation, model, status, code):
    model.error(status=status)
    response = post(api, conversation, "First question")
    assert response.status_code == code
    body = response.json()
    assert body["status"] == "failed" and body["code"] == "model_error"
    assert str(status) in body["detail"]
    assert [m["content"] for m in body["messages"]] == ["First question"]
    assert Conversation.objects.get(pk=conversation["id"]).status == "failed"
    model.reply("Now it works.")
    retry = post(api, conversation, "Second question")
    assert retry.status_code == 201 and retry.json()["status"] == "idle"
    sent = [m["content"] for m in model.messages(-1) if m["role"] == "user"]
    assert sent == ["First question", "Second question"]


def test_model_timeout_is_a_clear_error(api, conversation, model):
    import threading

    gave_up = threading.Event()

    def slow(body):
        gave_up.wait(30)  # answers only once the client has given up, however slow this machine is
        return "late"

    model.respond(slow)
    try:
        with override_toolcalling(TIMEOUT=0.3):
            response = post(api, conversation)
    finally:
        gave_up.set()
    assert response.status_code == 502
    assert "did not answer in time" in response.json()["detail"]


def test_model_failure_after_tool_calls_keeps_results_and_history_valid(api, conversation, model):
    model.call("add", {"a": 1, "b": 2})
    model.error(status=500)
    assert post(api, conversation).status_code == 502
    assert ToolCall.objects.get().status == "succeeded"
    assert_stored_history_valid(conversation["id"])
    model.reply("3")
    assert post(api, conversation, "and?").status_code == 201
    assert model.rejected == []


def test_arguments_are_stored_as_sent(api, conversation, model):
    model.call("ship", {"order_no": "20250719-0032", "speed": "express", "address": {"street": "a", "city": "Oslo"}})
    model.reply("Shipping.")
    post(api, conversation)
    call = ToolCall.objects.get()
    assert json.loads(call.raw_arguments)["speed"] == "express"
    assert call.result == '{"order_no":"20250719-0032","speed":"express","city":"Oslo"}'


@pytest.mark.database  # taken over by a conditional update on the turn's age
def test_a_turn_whose_process_died_is_taken_over_and_its_open_calls_answered(api, conversation, model):
    import datetime

    from django.utils import timezone

    conv = Conversation.objects.get(pk=conversation["id"])
    Message.objects.create(conversation=conv, role="user", content="ship it")
    asked = Message.objects.create(conversation=conv, role="assistant", content="")
    ToolCall.objects.create(conversation=conv, message=asked, call_id="call_x", name="add", status="running")
    Conversation.objects.filter(pk=conv.pk).update(status="running")
    assert post(api, conversation, "hello?").status_code == 409  # still fresh: another turn may be running
    Conversation.objects.filter(pk=conv.pk).update(updated_at=timezone.now() - datetime.timedelta(hours=1))
    model.reply("Back again.")
    response = post(api, conversation, "hello?")
    assert response.status_code == 201
    call = ToolCall.objects.get(call_id="call_x")
    # The dead turn may have started the tool: the model is told so, never that it did not run.
    assert call.status == "failed"
    assert call.result == "Error: the turn was interrupted. The tool may have run; whether it took effect is unknown."
    assert model.rejected == []
    assert_stored_history_valid(conversation["id"])
