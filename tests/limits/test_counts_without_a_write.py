"""What a model call used is counted even when the turn has no write left to carry it (the user deleted the
conversation while the model answered): every quantity, in every row the turn counts in, this period's."""

import pytest
from django.db import connections
from django.utils import timezone

from toolcalling.models import Conversation, UsageCounter
from toolcalling.testing import Reply, ToolCall, Usage

from .conftest import post, used


@pytest.mark.django_db(transaction=True)
@pytest.mark.toolcalling(USAGE_LIMITS=[{"tool_calls": 100, "per": "site", "period": "hour"}])
@pytest.mark.parametrize("cleaned", [False, True], ids=["rows kept", "rows deleted meanwhile"])
def test_tokens_and_tool_calls_of_an_answer_that_could_not_be_stored_are_counted(
    api, model, new_conversation, alice, cleaned
):
    conversation = new_conversation()

    def delete_then_call(body):
        Conversation.objects.filter(pk=conversation).delete()  # the user deletes it while the model writes
        if cleaned:  # and a cleanup job deletes the counter rows the process remembers: they are made again
            UsageCounter.objects.all().delete()
        connections.close_all()  # this server thread's connection
        calls = [ToolCall(name="add", arguments='{"a": 1, "b": 2}'), ToolCall(name="whoami")]
        return Reply(tool_calls=calls, usage=Usage(30, 12))

    model.respond(delete_then_call)
    before = timezone.now()
    response = post(api, conversation, "hello")
    assert response.status_code == 409 and response.json()["code"] == "turn_interrupted"
    turns = 0 if cleaned else 1  # the turn itself was counted when the message was stored
    expected = {"tokens": 42, "turns": turns, "tool_calls": 2}
    assert used("user", alice.pk) == used("assistant", "helper", "month") == used("site", "", "hour") == expected
    assert all(before <= row.updated_at <= timezone.now() for row in UsageCounter.objects.all())
