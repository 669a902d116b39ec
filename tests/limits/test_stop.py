"""Stopping a running turn: ``POST conversations/{id}/stop/`` by its owner ends it at its next step boundary,
whether it is a plain, streamed, stepped or continued turn; a tool already running finishes and is stored, the
calls not started are answered, and the conversation is idle with a valid history."""

import json
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connections
from django.utils import timezone
from rest_framework.test import APIClient

from tests.services import wait_until
from toolcalling import Assistant, approval, streaming
from toolcalling.model_apis import ModelReply, RequestedCall, Usage
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.storage import Ledger, claim
from toolcalling.testing import Reply
from toolcalling.testing import ToolCall as ScriptedCall

from .conftest import URL, history_problems, post

STOPPED = "Not run: stopped by the user."


def stop(user, conversation_id):
    client = APIClient()
    client.force_authenticate(user)
    response = client.post(f"/api/toolcalling/conversations/{conversation_id}/stop/")
    if threading.current_thread() is not threading.main_thread():
        connections.close_all()  # the model server's thread: its own connection
    return response


def in_thread(action):
    """Run ``action`` in a thread (as a second request would be); returns a function that waits for its result."""
    outcome = {}

    def run():
        try:
            outcome["value"] = action()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()

    def result():
        thread.join(timeout=60)
        assert not thread.is_alive(), "the turn did not end"
        return outcome["value"]

    return result


def calls_of(conversation_id):
    calls = ToolCall.objects.filter(conversation_id=conversation_id).order_by("message_id", "index")
    return list(calls.values_list("name", "status"))


@pytest.mark.each_api  # a history replayed across a stop, on each API in every pass
@pytest.mark.django_db(transaction=True)
def test_stop_ends_a_plain_turn_after_the_running_tool(api, alice, model, new_conversation, tmp_path):
    conversation = new_conversation("slow")
    marker = tmp_path / "job"
    model.calls(
        ("delete_everything", {"confirm": "yes"}),
        ("wait_for_release", {"marker": str(marker)}),
        ("add", {"a": 1, "b": 2}),
    )
    answer = in_thread(lambda: post(api, conversation, "three things"))
    wait_until(lambda: Path(f"{marker}.started").exists(), what="the tool to start")

    stopping = stop(alice, conversation)
    assert stopping.status_code == 202, stopping.content
    assert stopping.json() == {"status": "running", "stop_requested": True}
    Path(f"{marker}.release").touch()

    response = answer()
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "idle" and body["stopped"] is True and body["awaiting_approval"] == []
    # The gated call waiting for a decision is withdrawn too; the running tool finished and is stored.
    assert calls_of(conversation) == [("delete_everything", "cancelled"), ("wait_for_release", "succeeded"),
                                      ("add", "cancelled")]  # fmt: skip
    assert [(m["role"], m["content"]) for m in body["messages"]][2:] == [("tool", "released"), ("tool", STOPPED),
                                                                        ("tool", STOPPED)]  # fmt: skip
    errors = dict(ToolCall.objects.filter(conversation_id=conversation).values_list("name", "error"))
    assert errors == {"delete_everything": STOPPED, "wait_for_release": "", "add": STOPPED}  # stored as the errors
    conv = Conversation.objects.get(pk=conversation)
    assert conv.status == "idle" and conv.stop_requested_at is None and conv.turn_token is None
    assert history_problems(conversation) == []
    model.assert_done()  # asked once: no model call after the stop

    model.reply("Fresh start.")  # the next message works as usual
    assert post(api, conversation, "again").json()["stopped"] is False


@pytest.mark.django_db(transaction=True)
def test_stop_after_the_last_tool_skips_the_next_model_call(api, alice, model, new_conversation, tmp_path):
    conversation = new_conversation("slow")
    marker = tmp_path / "job"
    model.call("wait_for_release", {"marker": str(marker)})
    answer = in_thread(lambda: post(api, conversation, "one thing"))
    wait_until(lambda: Path(f"{marker}.started").exists(), what="the tool to start")
    assert stop(alice, conversation).status_code == 202
    Path(f"{marker}.release").touch()
    body = answer().json()
    assert body["stopped"] is True and [m["role"] for m in body["messages"]] == ["user", "assistant", "tool"]
    events = streaming.read(conversation, 0, 0)
    assert events[-1].type == "turn_end" and events[-1].data == {"status": "idle", "stopped": True}
    model.assert_done()


@pytest.mark.each_api  # a history replayed across a stop, on each API in every pass
@pytest.mark.django_db(transaction=True)
def test_stop_during_a_streamed_model_call_answers_its_calls_without_running_them(api, alice, model, new_conversation):
    conversation = new_conversation("slow")

    def answer_and_stop(body):
        assert stop(alice, conversation).status_code == 202  # the user presses Stop while the model writes
        return Reply(tool_calls=[ScriptedCall("add", '{"a": 1, "b": 2}'), ScriptedCall("add", '{"a": 3, "b": 4}')])

    model.respond(answer_and_stop)
    response = api.post(URL.format(conversation), {"content": "sums"}, format="json", HTTP_ACCEPT="text/event-stream")
    text = b"".join(response.streaming_content).decode()
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    assert events[-1]["type"] == "turn_end" and events[-1]["status"] == "idle" and events[-1]["stopped"] is True
    assert "tool_call_started" not in [e["type"] for e in events]
    assert calls_of(conversation) == [("add", "cancelled"), ("add", "cancelled")]
    assert history_problems(conversation) == []
    model.assert_done()


@pytest.mark.each_api  # a history replayed across a stop, on each API in every pass
def test_a_stepper_honours_a_stop_between_its_steps(alice, model):
    model.calls(("add", {"a": 1, "b": 2}), ("whoami", {}))
    stepper = Assistant.get("helper").steps(alice, "do two things")
    step = stepper.next()
    assert step is not None
    stop(alice, stepper.conversation.pk)
    step.execute()
    assert stepper.next() is None
    assert stepper.result.stopped is True and stepper.result.status == "idle"
    assert [c.status for c in stepper.result.tool_calls] == ["cancelled", "cancelled"]
    assert history_problems(stepper.conversation.pk) == []
    model.assert_done()


@pytest.mark.each_api  # a history replayed across an approval and a stop, on each API in every pass
@pytest.mark.django_db(transaction=True)
def test_a_continuation_after_approval_honours_a_stop(api, alice, approver, model, new_conversation):
    conversation = new_conversation("slow")
    model.call("delete_everything", {"confirm": "yes"})
    assert post(api, conversation, "delete it").json()["status"] == "awaiting_approval"
    waiting = ToolCall.objects.get(conversation_id=conversation)

    def answer_and_stop(body):
        assert stop(alice, conversation).status_code == 202  # the continuation runs: Stop is offered again
        return Reply(tool_calls=[ScriptedCall("add", '{"a": 1, "b": 2}')])

    model.respond(answer_and_stop)
    approval.approve(waiting, approver)  # eager Celery: the call runs, then the conversation continues
    assert calls_of(conversation) == [("delete_everything", "succeeded"), ("add", "cancelled")]
    assert Conversation.objects.get(pk=conversation).status == "idle"
    assert history_problems(conversation) == []
    model.assert_done()


def test_stopping_when_no_turn_runs_is_a_conflict(api, alice, bob, model, new_conversation):
    conversation = new_conversation()
    refused = stop(alice, conversation)
    assert refused.status_code == 409
    assert refused.json() == {"detail": "No turn of this conversation is running.", "code": "not_running",
                              "status": "idle"}  # fmt: skip
    model.call("delete_everything", {"confirm": "yes"})
    assert post(api, conversation, "delete").json()["status"] == "awaiting_approval"
    waiting = stop(alice, conversation)
    assert waiting.status_code == 409 and waiting.json()["status"] == "awaiting_approval"  # cancel, not stop
    assert stop(bob, conversation).status_code == 404  # another user's conversation


def test_stopping_a_turn_whose_process_died_ends_it_now(alice, model):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    token = claim(conversation, from_statuses=["idle"])
    calls = [RequestedCall(id="c1", name="add", arguments="{}")]
    ledger = Ledger(conversation, token)
    ledger.add_message(Message.Role.USER, "Add them.")  # every API's history begins with the user's question
    ledger.add_reply(ModelReply(content=None, tool_calls=calls, usage=Usage()))
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now() - timedelta(hours=1))

    response = stop(alice, conversation.pk)
    assert response.status_code == 202 and response.json()["status"] == "idle"
    call = ToolCall.objects.get(conversation=conversation)
    assert call.status == "failed" and "whether it took effect is unknown" in call.result
    assert streaming.read(conversation.pk, 0, 0)[-1].data == {"status": "idle", "stopped": True}
    assert history_problems(conversation.pk) == []


def test_a_live_turn_is_not_taken_over_by_a_stop(alice):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    token = claim(conversation, from_statuses=["idle"])
    assert stop(alice, conversation.pk).json() == {"status": "running", "stop_requested": True}
    ledger = Ledger(conversation, token)
    assert ledger.check_stop() is True  # what the turn finds before its next model call
    conversation.refresh_from_db()
    assert conversation.turn_token == token and conversation.stop_requested_at is not None
