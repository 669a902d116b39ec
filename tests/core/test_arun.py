"""``Assistant.arun``: the one loop driven from async code, the wait for the model on the event loop."""

import asyncio
import threading

import pytest

from toolcalling import Assistant
from toolcalling.exceptions import ModelError
from toolcalling.model_apis import get_model_api
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.testing import Reply

from ..aio import run

pytestmark = pytest.mark.django_db(transaction=True)  # the turn's writes run in Django's thread for sync code


@pytest.mark.each_api  # every model API has its SDK's async client
def test_an_async_turn_runs_its_calls_and_stores_what_a_sync_turn_stores(model, model_api, alice):
    assistant = Assistant.get("helper")
    assert get_model_api(assistant).build_async_client is not None  # the settings' client has an async twin
    model.calls(("add", {"a": 2, "b": 3}))
    model.reply("2 + 3 = 5")
    result = run(assistant.arun(alice, "What is 2 + 3?"))
    assert result.reply == "2 + 3 = 5"
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    conversation = Conversation.objects.get(pk=result.conversation.pk)
    assert conversation.status == "idle"
    assert ToolCall.objects.get(conversation=conversation).result == "5"
    assert [m["role"] for m in model.messages(1)] == ["system", "user", "assistant", "tool"]


@pytest.mark.each_api
def test_async_turns_wait_for_the_model_at_the_same_time(model, model_api, alice):
    both_asked = threading.Barrier(2, timeout=20)  # the server answers each request in a thread of its own

    def answer(body):
        both_asked.wait()  # broken (an error reply) unless the other turn's request is in flight too
        return Reply(content="done")

    model.respond(answer)
    model.respond(answer)
    assistant = Assistant.get("helper")

    async def two_turns():
        return await asyncio.gather(assistant.arun(alice, "one"), assistant.arun(alice, "two"))

    results = run(two_turns())
    assert [r.reply for r in results] == ["done", "done"]
    assert Conversation.objects.filter(user=alice, status="idle").count() == 2


def test_a_model_error_fails_the_async_turn_as_it_fails_a_sync_one(model, alice):
    model.error(400, "bad request")
    with pytest.raises(ModelError):
        run(Assistant.get("helper").arun(alice, "Hello?"))
    conversation = Conversation.objects.get(user=alice)
    assert conversation.status == "failed"
    assert list(Message.objects.filter(conversation=conversation).values_list("role", flat=True)) == ["user"]


def test_a_gated_call_waits_for_approval_in_an_async_turn(model, alice):
    model.calls(("delete_everything", {"confirm": "yes"}))
    result = run(Assistant.get("helper").arun(alice, "Delete everything"))
    assert result.status == "awaiting_approval"
    assert [c.status for c in result.awaiting_approval] == ["awaiting_approval"]
