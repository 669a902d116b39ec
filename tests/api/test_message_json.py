"""A POST's messages are shown by one serializer built once per process: exactly as a new serializer shows them."""

import json

import pytest
from django.db.models.sql.compiler import SQLCompiler

from toolcalling import Assistant
from toolcalling.web import MessageSerializer, messages_json


@pytest.mark.chat_completions  # priced by its test model's name
@pytest.mark.toolcalling(PRICES={"test-model": {"input": "1.25", "output": "10"}})
def test_the_built_once_serializer_shows_a_turn_as_a_new_one_does(model, alice):
    model.calls(("add", {"b": 3, "a": 2}), ("whoami", {}), ("no_such_tool", {}))
    model.calls(("delete_everything", {"confirm": "yes"}))  # waits for approval: no preview without a request
    result = Assistant.get("helper").run(alice, "Add, then delete everything")
    messages = result.messages
    assert {c.status for m in messages for c in m.tool_calls.all()} >= {"succeeded", "failed", "awaiting_approval"}
    expected = MessageSerializer(messages, many=True).data
    assert messages_json(messages) == expected
    assert json.dumps(messages_json(messages)) == json.dumps(expected)  # the same keys in the same order
    assert messages_json(messages)[1]["tool_calls"][0]["arguments"] == {"a": 2, "b": 3}  # the parameters' order
    assert messages_json(messages)[1]["cost"] is not None
    assert messages_json(messages) == messages_json(messages)  # nothing of one call stays in the serializer


def test_a_turns_messages_are_shown_without_compiling_a_query(model, alice, monkeypatch):
    """A message the turn stored knows it has no calls or no files: showing it neither queries nor compiles the
    query that would find none."""
    model.calls(("add", {"a": 2, "b": 3}))
    model.reply("5")
    result = Assistant.get("helper").run(alice, "2 + 3?")
    compiled: list[str] = []
    real = SQLCompiler.as_sql

    def counting(self, *args, **kwargs):
        compiled.append(self.query.model.__name__)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", counting)
    shown = messages_json(result.messages)
    assert [m["role"] for m in shown] == ["user", "assistant", "tool", "assistant"]
    assert [len(m["tool_calls"]) for m in shown] == [0, 1, 0, 0]
    assert compiled == []


@pytest.mark.chat_completions  # priced by its test model's name
@pytest.mark.toolcalling(PRICES={"test-model": {"input": "1.25", "output": "10"}})
def test_messages_are_shown_as_drfs_own_serializer_shows_them(model, alice, admin_user, rf, monkeypatch):
    """``ReadSerializer`` reads each field's value its own way: the output is DRF's, every field of a message, its
    calls (a waiting one, with what a request's user who may decide it sees) and its files."""
    from rest_framework import serializers
    from rest_framework.request import Request

    from toolcalling.models import Attachment, Message
    from toolcalling.web._serializers import ReadSerializer

    model.calls(("add", {"b": 3, "a": 2}), ("no_such_tool", {}))
    model.calls(("delete_everything", {"confirm": "yes"}))
    result = Assistant.get("helper").run(alice, "Add, then delete everything")
    question = result.messages[0]
    Attachment.objects.create(user=alice, conversation=question.conversation, message=question,
                              storage_name="a/b.png", name="b.png", content_type="image/png", size=7)  # fmt: skip
    messages = list(Message.objects.filter(conversation=question.conversation).order_by("id"))
    request = Request(rf.get("/"))
    request.user = admin_user  # who may decide the waiting call: it has a preview
    context = {"request": request}

    def shown() -> str:
        return json.dumps(MessageSerializer(messages, many=True, context=context).data)

    ours = shown()
    monkeypatch.setattr(ReadSerializer, "to_representation", serializers.ModelSerializer.to_representation)
    drfs = shown()
    assert ours == drfs
    data = json.loads(ours)
    assert data[0]["attachments"][0]["name"] == "b.png"
    waiting = [c for m in data for c in m["tool_calls"] if c["status"] == "awaiting_approval"]
    assert waiting and waiting[0]["label"] == "Delete everything"
    assert data[1]["cost"] is not None and data[1]["created_at"]
