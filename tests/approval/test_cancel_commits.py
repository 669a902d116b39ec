"""Cancelling waiting calls frees the conversation without asking the model, also once the cancel has committed.

The continuation of a conversation is queued by a commit callback. Under ``db`` a test runs inside a transaction
that never commits, so those callbacks never run and a cancel that did queue one would still look right; these
tests run under ``transactional_db``, where every decision commits and its callbacks run (Celery runs the tasks
eagerly here). A rejection, queued the same way, is the check that they do.
"""

import pytest

from tests.approvalapp.models import Counter
from toolcalling.models import Conversation, Message, ToolCall

URL = "/api/toolcalling/"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def waiting(api, ops, model):
    """alice asked for a gated ``bump``; it waits for a decision."""
    model.call("bump", {"name": "orders", "by": 2})
    response = api.post(f"{URL}conversations/{ops['id']}/messages/", {"content": "bump orders"}, format="json")
    assert response.status_code == 201, response.content
    return ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])


def roles(conversation_id):
    return list(Message.objects.filter(conversation_id=conversation_id).order_by("id").values_list("role", flat=True))


def test_a_committed_cancel_does_not_continue_the_conversation(api, ops, waiting, model):
    response = api.post(f"{URL}conversations/{ops['id']}/cancel/")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "idle"
    assert ToolCall.objects.get(pk=waiting.pk).status == "cancelled"
    assert len(model.requests) == 1  # the model was not asked again after the cancel committed
    assert roles(ops["id"]) == ["user", "assistant", "tool"]  # the cancellation is the last word
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    assert not Counter.objects.filter(name="orders").exists()
    model.assert_done()


def test_a_committed_rejection_does_continue_it(api, ops, waiting, model, approver_api):
    model.reply("A staff member said no, so the counter stays as it is.")
    response = approver_api.post(f"{URL}tool-calls/{waiting.pk}/reject/", {"reason": "not today"}, format="json")
    assert response.status_code == 200, response.content
    assert len(model.requests) == 2  # the commit callback queued the continuation, and it ran
    assert roles(ops["id"]) == ["user", "assistant", "tool", "assistant"]
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    model.assert_done()
