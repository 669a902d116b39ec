"""The REST API: assistants, own conversations only, input validation, and constant queries per turn."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from toolcalling.models import Conversation, Message

URL = "/api/toolcalling/"


def test_anonymous_users_are_refused(db):
    assert APIClient().get(URL + "assistants/").status_code in (401, 403)
    assert APIClient().get(URL + "conversations/").status_code in (401, 403)


def test_assistants_lists_what_the_user_may_use(api):
    body = api.get(URL + "assistants/").json()
    assert {"id": "helper", "name": "Helper", "description": "A test assistant."} in body


def test_create_list_retrieve_patch_delete_own_conversations(api, alice):
    created = api.post(URL + "conversations/", {"assistant": "helper"}, format="json")
    assert created.status_code == 201
    conv = created.json()
    assert conv["status"] == "idle" and conv["assistant"] == "helper" and conv["origin"] == "chat"
    listed = api.get(URL + "conversations/").json()
    assert [c["id"] for c in listed] == [conv["id"]]
    patched = api.patch(URL + f"conversations/{conv['id']}/", {"title": "Orders"}, format="json")
    assert patched.json()["title"] == "Orders"
    assert (
        api.patch(URL + f"conversations/{conv['id']}/", {"status": "idle", "assistant": "x"}, format="json").status_code
        == 400
    )
    assert api.delete(URL + f"conversations/{conv['id']}/").status_code == 204
    assert not Conversation.objects.exists()


def test_another_users_conversation_is_a_404(api, bob):
    theirs = Conversation.objects.create(user=bob, assistant_id="helper")
    assert api.get(URL + f"conversations/{theirs.pk}/").status_code == 404
    assert api.get(URL + f"conversations/{theirs.pk}/messages/").status_code == 404
    assert api.post(URL + f"conversations/{theirs.pk}/messages/", {"content": "hi"}, format="json").status_code == 404
    assert api.delete(URL + f"conversations/{theirs.pk}/").status_code == 404
    assert api.get(URL + "conversations/").json() == []


def test_unknown_assistant_is_a_400(api):
    response = api.post(URL + "conversations/", {"assistant": "nope"}, format="json")
    assert response.status_code == 400
    assert "Unknown assistant 'nope'" in response.json()["assistant"][0]


@pytest.mark.parametrize(
    "payload,fragment",
    [
        ({}, "required"),
        ({"content": ""}, "blank"),
        ({"content": "   "}, "blank"),
        ({"content": "x" * 20_001}, "too long"),
    ],
)
def test_bad_message_input_is_a_400_and_nothing_is_stored(api, conversation, payload, fragment):
    response = api.post(URL + f"conversations/{conversation['id']}/messages/", payload, format="json")
    assert response.status_code == 400
    assert fragment in response.json()["content"][0]
    assert not Message.objects.exists()


def test_a_busy_conversation_refuses_a_new_message_with_409(api, conversation):
    Conversation.objects.filter(pk=conversation["id"]).update(status="running")
    response = api.post(URL + f"conversations/{conversation['id']}/messages/", {"content": "hi"}, format="json")
    assert response.status_code == 409
    assert "busy" in response.json()["detail"]
    assert not Message.objects.exists()


def test_history_lists_messages_with_their_tool_calls(api, conversation, model):
    model.call("add", {"a": 1, "b": 2})
    model.reply("3")
    api.post(URL + f"conversations/{conversation['id']}/messages/", {"content": "1+2"}, format="json")
    history = api.get(URL + f"conversations/{conversation['id']}/messages/").json()
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
    call = history[1]["tool_calls"][0]
    assert {k: call[k] for k in ("call_id", "name", "arguments", "status", "result")} == {
        "call_id": history[2]["tool_call_id"],
        "name": "add",
        "arguments": {"a": 1, "b": 2},
        "status": "succeeded",
        "result": "3",
    }
    assert set(history[0]) >= {"id", "role", "content", "tool_calls", "tool_call_id", "created_at"}
    assert api.get(URL + f"conversations/{conversation['id']}/").json()["title"] == "1+2"


def fill_history(conversation_id, turns):
    messages = []
    for i in range(turns):
        messages.append(Message(conversation_id=conversation_id, role="user", content=f"question {i}"))
        messages.append(Message(conversation_id=conversation_id, role="assistant", content=f"answer {i}"))
    Message.objects.bulk_create(messages)


def count_turn_queries(api, conversation_id, model):
    user = Conversation.objects.get(pk=conversation_id).user
    api.force_authenticate(type(user).objects.get(pk=user.pk))  # as in a real request: permissions load afresh
    model.call("add", {"a": 1, "b": 2})
    model.reply("3")
    with CaptureQueriesContext(connection) as queries:
        response = api.post(URL + f"conversations/{conversation_id}/messages/", {"content": "1+2"}, format="json")
    assert response.status_code == 201
    return len(queries)


def test_a_turns_queries_do_not_grow_with_the_conversation(api, model, alice):
    short = Conversation.objects.create(user=alice, assistant_id="helper", title="t")
    long = Conversation.objects.create(user=alice, assistant_id="helper", title="t")
    fill_history(short.pk, 5)
    fill_history(long.pk, 250)
    assert Message.objects.filter(conversation=short).count() == 10
    assert Message.objects.filter(conversation=long).count() == 500
    count_turn_queries(api, short.pk, model)  # the process's first turn makes this period's usage counter rows
    assert count_turn_queries(api, short.pk, model) == count_turn_queries(api, long.pk, model)
    assert len(model.messages(-1)) == 1 + 500 + 1 + 2  # system, history, question, call + result


def test_a_calls_arguments_come_in_the_tools_parameter_order_on_every_database(api, conversation, model):
    # PostgreSQL's jsonb keeps no key order; the history answers in the tool's parameter order.
    model.call(
        "ship", '{"address": {"street": "1 Main St", "city": "Springfield"}, "speed": "express", "order_no": "7"}'
    )
    model.reply("Shipped.")
    url = URL + f"conversations/{conversation['id']}/messages/"
    assert api.post(url, {"content": "ship 7"}, format="json").status_code == 201
    (call,) = api.get(url).json()[1]["tool_calls"]
    assert list(call["arguments"]) == ["order_no", "speed", "address"]
    assert call["arguments"]["address"] == {"street": "1 Main St", "city": "Springfield"}


def test_text_beyond_three_utf8_bytes_a_character_is_stored_whole_on_every_database(api, conversation, model):
    # Emoji and other characters outside the Basic Multilingual Plane take four bytes in UTF-8: MySQL's and
    # MariaDB's "utf8" (utf8mb3) refuses them, utf8mb4 keeps them. Everything a turn writes carries some.
    model.call("ship", {"order_no": "7 🚚", "address": {"street": "1 Main St", "city": "𝔖pringfield"}})
    model.reply("Shipped 🚚 to 𝔖pringfield.")
    url = URL + f"conversations/{conversation['id']}/"
    assert api.post(url + "messages/", {"content": "ship 7 🚚 😀"}, format="json").status_code == 201
    assert api.patch(url, {"title": "Orders 📦"}, format="json").status_code == 200
    assert api.get(url).json()["title"] == "Orders 📦"
    user, asked, answered, final = api.get(url + "messages/").json()  # read back from the database
    assert user["content"] == "ship 7 🚚 😀"
    (call,) = asked["tool_calls"]
    assert call["arguments"] == {
        "order_no": "7 🚚",
        "speed": "standard",
        "address": {"street": "1 Main St", "city": "𝔖pringfield"},
    }
    assert (
        json.loads(call["result"])
        == json.loads(answered["content"])
        == {"order_no": "7 🚚", "speed": "standard", "city": "𝔖pringfield"}
    )
    assert final["content"] == "Shipped 🚚 to 𝔖pringfield."


def test_a_posted_message_reads_its_conversation_alone_the_user_is_the_requests(api, model, alice):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper", title="t")
    model.reply("Hello.")
    with CaptureQueriesContext(connection) as queries:
        response = api.post(URL + f"conversations/{conversation.pk}/messages/", {"content": "Hi"}, format="json")
    assert response.status_code == 201, response.content
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")]
    first = next(sql for sql in reads if "toolcalling_conversation" in sql.split(" FROM ")[1])
    assert "auth_user" not in first  # no join: the owner is the request's user, whom the filter names
    assert not [sql for sql in reads if sql.split(" FROM ")[1].lstrip('"`').startswith("auth_user")]
