"""Races that used to corrupt a conversation: renaming, deleting or taking over during a turn, deeply nested
JSON, and sites with ATOMIC_REQUESTS. Each ends with a history the strict server accepts."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone
from pydantic import BaseModel
from rest_framework.test import APIClient

from tests.approval.test_queue_down import broker_down
from toolcalling import Assistant, tool
from toolcalling.api.serializers import ConversationSerializer
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.testutils import override_toolcalling

from .conftest import URL, answers_per_call, history_problems

entered = threading.Event()
release = threading.Event()


@tool
def slow_step(label: str) -> str:
    """A step that takes as long as the test wants (it waits to be released)."""
    entered.set()
    assert release.wait(30), "the test never released the slow step"
    return f"{label} done"


class IntegrityAssistant(Assistant):
    id = "integrity"
    instructions = "Test assistant."
    tools = [slow_step, "add"]


class Answer(BaseModel):
    answer: str


class StructuredIntegrityAssistant(Assistant):
    id = "integrity_structured"
    instructions = "Answer as JSON."
    output_type = Answer
    output_retries = 1


@pytest.fixture
def client_of(alice) -> Any:
    def make() -> APIClient:
        client = APIClient()
        client.force_authenticate(alice)
        return client

    return make


@pytest.fixture
def gates() -> Iterator[None]:
    entered.clear()
    release.clear()
    yield
    release.set()


def test_a_turn_taken_over_while_its_tool_runs_writes_nothing_more(transactional_db, alice, client_of, model, gates):
    conversation = Conversation.objects.create(user=alice, assistant_id="integrity")
    model.call("slow_step", {"label": "first"})
    first: dict[str, Any] = {}

    def run_first() -> None:
        response = client_of().post(URL.format(conversation.pk), {"content": "go"}, format="json")
        first.update(status=response.status_code, body=response.json())
        connections.close_all()

    worker = threading.Thread(target=run_first)
    worker.start()
    assert entered.wait(30)
    # The first turn went quiet past STALE_TURN_TIMEOUT (its process is taken to be dead): a new message takes over.
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now() - timedelta(hours=1))
    model.reply("Hello again.")
    second = client_of().post(URL.format(conversation.pk), {"content": "again"}, format="json")
    assert second.status_code == 201 and second.json()["status"] == "idle"
    release.set()
    worker.join(30)

    # The first turn's late result was refused, not appended; its request says why.
    assert first["status"] == 409 and first["body"]["code"] == "turn_interrupted"
    call = ToolCall.objects.get(conversation=conversation)
    assert call.status == "failed" and "may have run" in call.result
    assert answers_per_call(conversation.pk) == {call.call_id: 1}
    assert list(Message.objects.filter(conversation=conversation).values_list("role", flat=True)) == [
        "user", "assistant", "tool", "user", "assistant",
    ]  # fmt: skip
    conversation.refresh_from_db()
    assert conversation.status == "idle" and conversation.turn_token is None
    assert history_problems(conversation.pk) == []
    model.assert_done()


def test_deleting_a_conversation_during_its_turn_stops_the_turn_cleanly(transactional_db, alice, client_of, model):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    deleted = []

    def delete_then_answer(body: dict) -> str:
        deleted.append(client_of().delete(f"/api/toolcalling/conversations/{conversation.pk}/").status_code)
        connections.close_all()
        return "Too late."

    model.respond(delete_then_answer)
    response = client_of().post(URL.format(conversation.pk), {"content": "hi"}, format="json")
    assert deleted == [204]
    assert response.status_code == 409 and response.json()["code"] == "turn_interrupted"
    assert not Conversation.objects.filter(pk=conversation.pk).exists()
    assert not Message.objects.filter(conversation_id=conversation.pk).exists()


def test_renaming_during_a_turn_keeps_the_turn_and_the_new_title(transactional_db, alice, client_of, model):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    renamed = []

    def rename_then_answer(body: dict) -> str:
        url = f"/api/toolcalling/conversations/{conversation.pk}/"
        renamed.append(client_of().patch(url, {"title": "Mine"}, format="json").json())
        connections.close_all()
        return "Done."

    model.call("add", {"a": 1, "b": 2})
    model.respond(rename_then_answer)
    response = client_of().post(URL.format(conversation.pk), {"content": "1+2"}, format="json")
    assert response.status_code == 201 and response.json()["status"] == "idle"
    assert renamed[0]["title"] == "Mine" and renamed[0]["status"] == "running"
    conversation.refresh_from_db()
    assert (conversation.title, conversation.status, conversation.turn_token) == ("Mine", "idle", None)
    assert conversation.total_tokens == sum(m.total_tokens for m in conversation.messages.all()) > 0


def test_a_rename_writes_the_title_alone(db, alice):
    """The API's update never writes back the status or totals it read (a turn may have changed them since)."""
    conversation = Conversation.objects.create(user=alice, assistant_id="helper", status="running")
    stale = Conversation.objects.get(pk=conversation.pk)
    Conversation.objects.filter(pk=conversation.pk).update(status="idle", total_tokens=42)
    ConversationSerializer().update(stale, {"title": "New"})
    conversation.refresh_from_db()
    assert (conversation.title, conversation.status, conversation.total_tokens) == ("New", "idle", 42)


def test_the_admin_writes_a_conversations_title_alone(admin_client, alice):
    from django.db.models.signals import pre_save

    conversation = Conversation.objects.create(user=alice, assistant_id="helper", status="running")
    url = f"/admin/toolcalling/conversation/{conversation.pk}/change/"

    ended: list[bool] = []

    def turn_ends_meanwhile(sender: Any, instance: Any, **kwargs: Any) -> None:
        # Between the admin reading the row and writing it, the running turn ends.
        Conversation.objects.filter(pk=instance.pk).update(status="idle", total_tokens=42)
        ended.append(True)

    inlines = {
        f"{prefix}-{name}": 0
        for prefix in ("messages", "attachments", "tool_calls")
        for name in ("TOTAL_FORMS", "INITIAL_FORMS")
    }
    pre_save.connect(turn_ends_meanwhile, sender=Conversation)
    try:
        response = admin_client.post(url, {"title": "Renamed by staff", "_save": "Save", **inlines})
        if not ended:  # the admin wrote without a full save (no pre_save): the turn ended after it
            turn_ends_meanwhile(Conversation, conversation)
    finally:
        pre_save.disconnect(turn_ends_meanwhile, sender=Conversation)
    assert response.status_code == 302, response.content
    conversation.refresh_from_db()
    assert (conversation.title, conversation.status, conversation.total_tokens) == ("Renamed by staff", "idle", 42)


@pytest.mark.parametrize("where", ["conversations", "messages", "approve"])
def test_too_deeply_nested_json_is_a_400(api, conversation, where):
    body = "[" * 100_000 + "]" * 100_000
    url = {
        "conversations": "/api/toolcalling/conversations/",
        "messages": URL.format(conversation["id"]),
        "approve": "/api/toolcalling/tool-calls/1/approve/",
    }[where]
    response = api.generic("POST", url, body, content_type="application/json")
    assert response.status_code in (400, 403) and response.status_code != 500
    if where != "approve":  # a non-approver is refused before the body is read
        assert response.status_code == 400 and "nested too deeply" in response.json()["detail"]


@pytest.fixture
def atomic_requests() -> Iterator[None]:
    """The site wraps every view in a transaction, as ATOMIC_REQUESTS = True does."""
    settings_dict = connections["default"].settings_dict
    saved = settings_dict.get("ATOMIC_REQUESTS", False)
    settings_dict["ATOMIC_REQUESTS"] = True
    yield
    settings_dict["ATOMIC_REQUESTS"] = saved


@pytest.mark.parametrize("case", ["model_error", "tool_call_limit_exceeded", "output_validation_failed"])
def test_with_atomic_requests_turn_failures_keep_their_answer(atomic_requests, api, model, case):
    assistant = "integrity_structured" if case == "output_validation_failed" else "helper"
    conversation = api.post("/api/toolcalling/conversations/", {"assistant": assistant}, format="json").json()
    if case == "model_error":
        model.error(500)
        expected = 502
    elif case == "tool_call_limit_exceeded":
        model.calls(("add", {"a": 1, "b": 1}), ("add", {"a": 2, "b": 2}))
        expected = 422
    else:
        model.reply("not json")
        model.reply("still not json")
        expected = 422
    with override_toolcalling(MAX_CALLS_PER_TOOL=1, ON_LIMIT_EXCEEDED="raise"):
        response = api.post(URL.format(conversation["id"]), {"content": "go"}, format="json")
    assert response.status_code == expected and response.json()["code"] == case
    assert Conversation.objects.get(pk=conversation["id"]).status == "failed"
    assert history_problems(conversation["id"]) == []


@pytest.mark.django_db(transaction=True)
def test_with_atomic_requests_a_broker_outage_on_approval_is_a_503(atomic_requests, approver_api, api, model):
    from tests.approval.test_decisions import post

    ops = api.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json").json()
    model.call("bump", {"name": "atomic", "by": 1})
    waiting = post(api, ops, "bump it").json()["awaiting_approval"][0]
    with broker_down():
        response = approver_api.post(f"/api/toolcalling/tool-calls/{waiting['id']}/approve/")
    assert response.status_code == 503 and response.json()["code"] == "queue_unavailable"
    assert response["content-type"] == "application/json"
    assert ToolCall.objects.get(pk=waiting["id"]).status == "awaiting_approval"
