"""A site's ``post_save`` receivers hear of every message and tool call a turn stores, and of each call's outcome."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connections

from tests.model_signals import Seen, created, listening
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.testing import Reply


@pytest.fixture
def seen() -> Iterator[list[Seen]]:
    with listening() as heard:
        yield heard


def test_a_turn_with_a_tool_call_sends_post_save_for_each_message_and_the_calls_outcome(api, model, seen):
    conversation = api.post("/api/toolcalling/conversations/", {"assistant": "helper"}, format="json").json()
    model.call("add", {"a": 2, "b": 3})
    model.reply("5.")
    response = api.post(
        f"/api/toolcalling/conversations/{conversation['id']}/messages/", {"content": "2+3?"}, format="json"
    )
    assert response.status_code == 201, response.content

    messages = list(Message.objects.filter(conversation_id=conversation["id"]).order_by("id"))
    [call] = ToolCall.objects.filter(conversation_id=conversation["id"])
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    # Every row written is heard of once as created, in the order it was written.
    assert created(seen, "Message") == [m.pk for m in messages]
    assert created(seen, "ToolCall") == [call.pk]
    # The call's later change is an update the receiver hears of too, with what it wrote.
    [outcome] = [s for s in seen if s.model == "ToolCall" and not s.created]
    assert (outcome.pk, outcome.status) == (call.pk, "succeeded")
    assert outcome.update_fields is not None and {"status", "result", "finished_at"} <= outcome.update_fields
    # Heard when created as running, then with its result, before the tool message that answers it.
    calls = [s for s in seen if s.model == "ToolCall"]
    assert [(s.created, s.status) for s in calls] == [(True, "running"), (False, "succeeded")]
    assert seen.index(outcome) == seen.index(next(s for s in seen if s.pk == messages[2].pk)) - 1


@pytest.mark.django_db(transaction=True)
def test_a_turn_refused_by_its_fence_is_heard_of_only_for_what_it_wrote(api, model, seen, alice):
    """A turn that lost its claim writes nothing more, so nothing more is heard of."""
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")

    def taken_over(body: dict) -> Reply:
        Conversation.objects.filter(pk=conversation.pk).update(turn_token=None, status="idle")
        connections.close_all()  # this server thread's connection
        return Reply(content="Too late.")

    model.respond(taken_over)
    response = api.post(f"/api/toolcalling/conversations/{conversation.pk}/messages/", {"content": "hi"}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "turn_interrupted"
    [message] = Message.objects.filter(conversation=conversation)
    assert message.role == "user"
    assert seen == [Seen("Message", message.pk, True, None, "")]
