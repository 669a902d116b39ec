"""Approved calls run on a real worker, Celery's (Redis broker) or Django's Tasks (db_worker): exactly once, then
the conversation goes on."""

import json
import os
import threading

import pytest
from django.db import connection

from tests import asgi_server
from tests.approvalapp.models import Counter
from tests.services import wait_until
from toolcalling import approval
from toolcalling.exceptions import AlreadyDecided
from toolcalling.models import Conversation, Message, ToolCall


def post(api, conversation, content="hi"):
    url = f"/api/toolcalling/conversations/{conversation['id']}/messages/"
    return api.post(url, {"content": content}, format="json")


def counter(name):
    row = Counter.objects.filter(name=name).first()
    return row.value if row else 0


def tool_messages(call):
    return list(Message.objects.filter(conversation_id=call.conversation_id, role="tool", tool_call_id=call.call_id))


def final_answer(api, conversation):
    """Poll as the user would: GET until the conversation is idle with the model's final answer last."""

    def check():
        conv = api.get(f"/api/toolcalling/conversations/{conversation['id']}/").json()
        if conv["status"] != "idle":
            return None
        messages = api.get(f"/api/toolcalling/conversations/{conversation['id']}/messages/").json()
        return messages if messages[-1]["role"] == "assistant" and not messages[-1]["tool_calls"] else None

    return wait_until(check, what="the conversation to continue on the worker")


def race(*actions):
    """Run the actions in threads released together; return what each returned or raised."""
    barrier = threading.Barrier(len(actions))
    outcomes = [None] * len(actions)

    def run(index, action):
        try:
            barrier.wait(timeout=10)
            outcomes[index] = action()
        except Exception as exc:  # the loser's exception is the outcome under test
            outcomes[index] = exc
        finally:
            connection.close()  # each thread has its own connection

    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(actions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcomes


def gated_call(api, ops, model, name):
    model.call("bump", {"name": name})
    response = post(api, ops, f"bump {name}")
    assert response.status_code == 201, response.content
    return ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])


@pytest.mark.each_api
@pytest.mark.each_runner
def test_approved_call_runs_on_the_worker_as_the_requester_and_the_user_sees_the_answer(
    api, ops, approver_api, worker_model
):
    call = gated_call(api, ops, worker_model, "smoke")
    worker_model.reply("Bumped it.")
    assert approver_api.post(f"/api/toolcalling/tool-calls/{call.pk}/approve/").status_code == 200
    messages = final_answer(api, ops)
    assert messages[-1]["content"] == "Bumped it."
    result = json.loads(tool_messages(call)[0].content)
    assert result["pid"] != os.getpid()  # run by the worker process, not by this one
    assert (result["user"], result["tenant"]) == ("alice", "ops-tenant")  # requester, not the approver
    assert counter("smoke") == 1
    worker_model.assert_done()


@pytest.mark.each_runner
def test_racing_approvers_run_the_tool_once(api, ops, approver, worker_model):
    call = gated_call(api, ops, worker_model, "race")
    worker_model.reply("Bumped once.")
    outcomes = race(*[lambda: approval.approve(ToolCall.objects.get(pk=call.pk), approver)] * 4)
    assert sum(isinstance(o, ToolCall) for o in outcomes) == 1
    assert sum(isinstance(o, AlreadyDecided) for o in outcomes) == 3, outcomes
    assert final_answer(api, ops)[-1]["content"] == "Bumped once."
    assert counter("race") == 1
    assert len(tool_messages(call)) == 1
    worker_model.assert_done()


@pytest.mark.each_runner
def test_approve_racing_reject_through_the_api_has_one_winner(api, ops, approver, worker_model):
    call = gated_call(api, ops, worker_model, "duel")
    worker_model.reply("Decided.")

    def decide(verb):
        client = asgi_server.api_client()
        client.force_authenticate(approver)
        return client.post(f"/api/toolcalling/tool-calls/{call.pk}/{verb}/", {"reason": "no"}, format="json")

    approve_response, reject_response = race(lambda: decide("approve"), lambda: decide("reject"))
    assert sorted([approve_response.status_code, reject_response.status_code]) == [200, 409]
    loser = approve_response if approve_response.status_code == 409 else reject_response
    assert loser.json()["code"] == "already_decided"
    assert loser.json()["detail"].startswith("This tool call was already decided")
    assert final_answer(api, ops)[-1]["content"] == "Decided."
    call.refresh_from_db()
    if approve_response.status_code == 200:
        assert call.status == "succeeded" and counter("duel") == 1
    else:
        assert call.status == "rejected" and counter("duel") == 0
    assert len(tool_messages(call)) == 1
    worker_model.assert_done()


@pytest.mark.each_api
@pytest.mark.each_runner
def test_calls_finishing_together_continue_the_conversation_once(api, ops, approver, worker_model):
    worker_model.calls(("bump", {"name": "left"}), ("bump", {"name": "right"}), ("add", {"a": 1, "b": 2}))
    response = post(api, ops, "bump both")
    assert response.status_code == 201, response.content
    left, right = (ToolCall.objects.get(pk=c["id"]) for c in response.json()["awaiting_approval"])
    worker_model.reply("Both bumped, and 1 + 2 = 3.")  # exactly one continuation may ask for it
    outcomes = race(lambda: approval.approve(left, approver), lambda: approval.approve(right, approver))
    assert all(isinstance(o, ToolCall) for o in outcomes), outcomes
    assert final_answer(api, ops)[-1]["content"] == "Both bumped, and 1 + 2 = 3."
    assert (counter("left"), counter("right")) == (1, 1)
    last = worker_model.messages(-1)
    assert sorted(m["content"] for m in last if m["role"] == "tool")[0] == "3"  # the ungated call's result kept
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    worker_model.assert_done()  # no second continuation asked the model again


@pytest.mark.each_runner
def test_an_approved_call_on_the_worker_passes_through_the_assistants_hooks(api, approver_api, worker_model):
    conversation = api.post("/api/toolcalling/conversations/", {"assistant": "ops_hooked"}, format="json").json()
    call = gated_call(api, conversation, worker_model, "hooked")
    worker_model.reply("Bumped it.")
    assert approver_api.post(f"/api/toolcalling/tool-calls/{call.pk}/approve/").status_code == 200
    final_answer(api, conversation)

    call.refresh_from_db()
    assert call.status == ToolCall.Status.SUCCEEDED
    assert counter("hooked") == 1
    [message] = tool_messages(call)
    assert message.content.endswith(" (checked by the ops hook)")
    assert json.loads(message.content.removesuffix(" (checked by the ops hook)"))["value"] == 1
