"""A site's ``post_save`` receivers hear of every message and tool call a turn stores, and of each call's outcome."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection, connections
from django.db.models.signals import pre_save
from django.test.utils import CaptureQueriesContext

from tests.model_signals import Seen, created, listening
from toolcalling import Assistant
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


@pytest.mark.django_db(transaction=True)  # real transactions: where each receiver is told, and the statements
def test_an_answers_calls_are_stored_in_one_insert_and_each_heard_of_before_and_after_it(model, seen, alice):
    """Several calls of one answer are one ``INSERT``; a site's ``pre_save`` and ``post_save`` receivers hear of
    each call as if it had been saved by itself, inside the transaction that stores the answer."""
    before: list[tuple[str, bool, str]] = []

    def told_before(sender: type, instance: ToolCall, raw: bool, using: str, **kwargs: object) -> None:
        assert instance.pk is None and instance._state.adding  # not stored yet: a receiver may still change it
        before.append((instance.call_id, connections[using].in_atomic_block, instance.status))
        instance.decision_reason = f"noted {instance.index}"  # what a receiver sets here is stored

    pre_save.connect(told_before, sender=ToolCall, weak=False, dispatch_uid="test-calls-before")
    try:
        model.calls(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4}), ("add", {"a": 5, "b": 6}))
        model.reply("3, 7 and 11.")
        with CaptureQueriesContext(connection) as queries:
            result = Assistant.get("helper").run(alice, "1+2, 3+4 and 5+6?")
    finally:
        pre_save.disconnect(sender=ToolCall, dispatch_uid="test-calls-before")
    assert result.reply == "3, 7 and 11."
    calls = list(ToolCall.objects.filter(conversation=result.conversation).order_by("index"))
    assert [(c.status, c.decision_reason) for c in calls] == [("succeeded", f"noted {n}") for n in range(3)]
    table = connection.ops.quote_name(ToolCall._meta.db_table)  # MariaDB quotes with backticks
    inserts = [q["sql"] for q in queries.captured_queries if q["sql"].startswith(f"INSERT INTO {table}")]
    assert len(inserts) == 1
    assert before == [(c.call_id, True, "running") for c in calls]
    # Heard of as created, once each and in order, right after the answer that asks for them, in its transaction.
    assert created(seen, "ToolCall") == [c.pk for c in calls]
    heard = [s for s in seen if s.model == "ToolCall" and s.created]
    assert all(s.atomic and s.status == "running" and s.update_fields is None for s in heard)
    answer = Message.objects.get(conversation=result.conversation, role="assistant", tool_calls__index=0)
    first = seen.index(heard[0])
    assert seen[first - 1] == Seen("Message", answer.pk, True, None, "")
    assert seen[first : first + 3] == heard
