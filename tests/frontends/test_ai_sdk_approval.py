"""Approval through the AI SDK: ``tool-approval-request`` parts, the user's own calls decided with
``addToolApprovalResponse`` and a resend, staff calls that the browser cannot decide, and a staff decision's
continuation taken up with ``resumeStream`` while a real worker runs it."""

import threading

import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from tests.approvalapp.models import Counter
from tests.services import wait_until
from toolcalling.models import Conversation, ToolCall

from .conftest import chunk_types, parts


@pytest.fixture
def ops(alice) -> Conversation:
    return Conversation.objects.create(user=alice, assistant_id="ops")


@pytest.mark.each_api  # a history replayed across an approval, on each API in every pass
@pytest.mark.parametrize("auto", [False, True], ids=["sent-by-the-page", "sent-automatically"])
def test_the_user_confirms_their_own_call_through_the_sdk(chat, model, ops, auto):
    model.call("move_points", {"name": "alice", "points": 5})
    driver = chat(ops, auto=auto)
    waiting = driver("send", text="Give me five points")

    call = ToolCall.objects.get(conversation=ops)
    assert call.status == "awaiting_approval" and call.approver == "user"
    (part,) = parts(waiting, "tool-move_points")
    assert part["state"] == "approval-requested"
    assert part["approval"] == {"id": str(call.pk)}
    assert part["input"] == {"name": "alice", "points": 5}
    assert part["callProviderMetadata"] == {"toolcalling": {"id": call.pk, "approver": "user"}}
    assert waiting["chunks"][-1]["finishReason"] == "tool-calls"

    model.reply("Done: five points for you.")
    reply = driver("answer", approvalId=str(call.pk), approved=True)

    assert reply["status"] == "ready", reply
    call.refresh_from_db()
    assert (call.status, call.decided_by.username) == ("succeeded", "alice")
    assert Counter.objects.get(name="alice").value == 5
    # The answer continues the message that asked: its part has the output, then the model's text.
    assert [m["role"] for m in reply["messages"]] == ["user", "assistant"]
    (part,) = parts(reply, "tool-move_points")
    assert (part["state"], part["output"]) == ("output-available", "alice got 5 points for alice")
    assert parts(reply, "text")[-1]["text"] == "Done: five points for you."
    model.assert_done()


@pytest.mark.each_api  # a history replayed across a rejection, on each API in every pass
def test_the_user_declines_with_a_reason_the_model_is_told(chat, model, ops):
    model.call("move_points", {"name": "alice", "points": 500})
    driver = chat(ops)
    driver("send", text="Give me 500 points")
    call = ToolCall.objects.get(conversation=ops)

    model.reply("Understood, no points moved.")
    reply = driver("answer", approvalId=str(call.pk), approved=False, reason="too many")

    call.refresh_from_db()
    assert (call.status, call.decision_reason) == ("rejected", "too many")
    assert not Counter.objects.filter(name="alice").exists()
    (part,) = parts(reply, "tool-move_points")
    assert part["state"] == "output-denied"
    told = [m for m in model.messages(-1) if m["role"] == "tool"]
    assert told[-1]["content"] == "Not run: the user declined this call. Reason: too many"
    model.assert_done()


def test_the_browsers_answer_to_a_staff_call_decides_nothing(chat, model, conv):
    model.call("delete_everything", {"confirm": "yes"})
    driver = chat(conv)
    driver("send", text="Delete it all")
    call = ToolCall.objects.get(conversation=conv)
    assert call.approver == "staff"

    reply = driver("answer", approvalId=str(call.pk), approved=True)

    call.refresh_from_db()
    assert call.status == "awaiting_approval" and call.decided_by is None
    (part,) = parts(reply, "tool-delete_everything")
    assert part["state"] == "approval-requested"  # asked again: it still waits for staff
    assert "tool-approval-request" in chunk_types(reply)
    assert len(model.requests) == 1  # the model was not asked again


def test_a_staff_decision_run_by_the_worker_is_resumed_in_the_chat(chat, on_worker, live_server, conv):
    model = on_worker
    model.call("delete_everything", {"confirm": "yes"})
    driver = chat(conv)
    waiting = driver("send", text="Delete it all")
    assert parts(waiting, "tool-delete_everything")[0]["state"] == "approval-requested"
    call = ToolCall.objects.get(conversation=conv)

    released = threading.Event()

    def answer_when_released(body):
        released.wait(30)
        return "Everything is deleted, as approved."

    model.respond(answer_when_released)
    carol = get_user_model().objects.create_user("carol", password="pw", is_staff=True)
    carol.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    with httpx2.Client(auth=("carol", "pw"), timeout=30) as staff:
        approved = staff.post(f"{live_server.url}/api/toolcalling/tool-calls/{call.pk}/approve/", json={})
        assert approved.status_code == 200, approved.text

    # The worker ran the call and its continuation now waits for the model: a turn is running.
    wait_until(lambda: Conversation.objects.get(pk=conv.pk).status == "running", what="the continuation")
    driver.start("resume")
    driver.reply(status="streaming")  # the chat reads the replay of the running turn
    released.set()
    reply = driver.reply()

    assert reply["status"] == "ready", reply
    resumed = reply["messages"][-1]
    assert resumed["role"] == "assistant"
    (part,) = [p for p in resumed["parts"] if p["type"] == "tool-delete_everything"]
    assert (part["toolCallId"], part["state"]) == (call.call_id, "output-available")
    assert part["output"] == "deleted for alice (yes)"
    assert [p["text"] for p in resumed["parts"] if p["type"] == "text"] == ["Everything is deleted, as approved."]
    assert reply["chunks"][-1]["messageMetadata"]["toolcalling"]["status"] == "idle"
    call.refresh_from_db()
    assert call.status == "succeeded"
    # Once the turn is over there is nothing to resume.
    assert driver("resume")["chunks"] == []
    model.assert_done()
