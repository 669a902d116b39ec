"""A conversation's history in each frontend's own shape: ``ai-sdk/chat/{id}/messages`` as the SDK's UI messages
(checked by the SDK's own ``validateUIMessages``, then chatted on by its chat client, so a page that passes them to
``useChat`` starts where the conversation is) and ``ag-ui/{threadId}/messages`` as AG-UI's ``MESSAGES_SNAPSHOT``
(parsed by ag-ui-protocol's own types). Approval parts carry the arguments and the preview, on both."""

import base64
import json
from typing import Any

import httpx2
import pytest
from ag_ui.core import Event, EventType
from pydantic import TypeAdapter

from tests.approvalapp.models import Counter
from tests.attachments import files
from toolcalling.models import Conversation, Message, ToolCall

from .conftest import parts
from .test_ag_ui import run, run_input

EVENTS = TypeAdapter(Event)
PREVIEW = "alice has 0 points now; it gets 5 more."


@pytest.fixture
def ops(alice) -> Conversation:
    return Conversation.objects.create(user=alice, assistant_id="ops")


def history(base, conversation, *, protocol="ai-sdk/chat", user=("alice", "pw")):
    with httpx2.Client(auth=user, timeout=30) as client:
        return client.get(f"{base}/api/toolcalling/{protocol}/{conversation.pk}/messages")


def snapshot(base, conversation):
    response = history(base, conversation, protocol="ag-ui")
    assert response.status_code == 200, response.text
    event = EVENTS.validate_python(response.json())
    assert event.type == EventType.MESSAGES_SNAPSHOT
    return event


def comparable(messages):
    """UI messages step by step, without their ids and the text parts' state, and without a tool part's ``title``,
    which the SDK's ``validateUIMessages`` drops (its schema has none; the endpoint sends it, as the stream does).
    Within a step the parts are compared in any order: the live stream has a streamed text before the reasoning
    that came with it (the reasoning is known once the answer is stored), the history has them as the model did."""

    def kept(part):
        drop = {"title"} if part["type"].startswith("tool-") else {"state", "providerMetadata"}
        return json.dumps({k: v for k, v in part.items() if k not in drop}, sort_keys=True)

    found = []
    for message in messages:
        steps: list[list[str]] = []
        for part in message["parts"]:
            if part["type"] == "step-start" or not steps:
                steps.append([])
            steps[-1].append(kept(part))
        found.append({"role": message["role"], "steps": [sorted(step) for step in steps]})
    return found


@pytest.mark.each_api
def test_a_reopened_chat_starts_with_what_the_live_chat_showed_and_chats_on(chat, model, conv):
    model.call("add", {"a": 2, "b": 3})
    model.reply("Two and three make five.")
    live = chat(conv)("send", text="What is 2 + 3?")

    reopened = chat(conv, history=True)
    started = reopened.opened["messages"]
    assert comparable(started) == comparable(live["messages"])
    assert started[-1]["metadata"] == {"toolcalling": {"conversation": str(conv.pk), "status": "idle"}}
    question = Message.objects.get(conversation=conv, role="user")
    assert [m["id"] for m in started] == [str(question.pk), f"answer-{question.pk}"]
    assert live["messages"][-1]["id"] == f"answer-{question.pk}"  # the stream named its answer so too

    model.reply("Ten.")
    reply = reopened("send", text="And 5 + 5?")
    assert reply["status"] == "ready", reply
    assert [m["role"] for m in reply["messages"]] == ["user", "assistant", "user", "assistant"]
    assert [p["text"] for p in parts(reply, "text")] == ["Two and three make five.", "Ten."]
    model.assert_done()


def test_a_waiting_call_the_user_confirms_is_asked_again_with_its_preview_and_answered_from_history(chat, model, ops):
    model.call("move_points", {"name": "alice", "points": 5})
    live = chat(ops)("send", text="Give me five points")
    call = ToolCall.objects.get(conversation=ops)
    (asked,) = parts(live, "tool-move_points")
    aid = {"title": "Move points", "arguments": {"name": "alice", "points": 5}, "approver": "user",
           "preview": {"value": PREVIEW, "error": ""}, "previewText": PREVIEW}  # fmt: skip
    assert asked["approval"] == {"id": str(call.pk), "descriptor": aid}  # the live part carries it too

    reopened = chat(ops, history=True)
    (part,) = [p for p in reopened.opened["messages"][-1]["parts"] if p["type"] == "tool-move_points"]
    assert (part["state"], part["toolCallId"]) == ("approval-requested", call.call_id)
    assert part["input"] == {"name": "alice", "points": 5}
    assert part["approval"] == {"id": str(call.pk), "descriptor": aid}

    model.reply("Done: five points for you.")
    reply = reopened("answer", approvalId=str(call.pk), approved=True)
    assert reply["status"] == "ready", reply
    (part,) = parts(reply, "tool-move_points")
    assert (part["state"], part["output"]) == ("output-available", "alice got 5 points for alice")
    assert Counter.objects.get(name="alice").value == 5
    assert [m["role"] for m in reply["messages"]] == ["user", "assistant"]
    model.assert_done()


def test_decided_calls_come_back_in_their_states(chat, model, ops, conv):
    model.call("move_points", {"name": "alice", "points": 500})
    driver = chat(ops)
    driver("send", text="Give me 500 points")
    declined = ToolCall.objects.get(conversation=ops)
    model.reply("Understood, no points moved.")
    driver("answer", approvalId=str(declined.pk), approved=False, reason="too many")
    model.call("explode", {})
    model.reply("The tool failed, sorry.")
    chat(conv)("send", text="Try the tool")

    (denied,) = [p for p in chat(ops, history=True).opened["messages"][-1]["parts"] if p["type"].startswith("tool-")]
    assert denied["state"] == "output-denied"
    assert denied["approval"] == {"id": str(declined.pk), "approved": False, "reason": "too many"}
    (failed,) = [p for p in chat(conv, history=True).opened["messages"][-1]["parts"] if p["type"].startswith("tool-")]
    assert (failed["state"], failed["errorText"]) == ("output-error", ToolCall.objects.get(name="explode").error)
    assert "approval" not in failed
    model.assert_done()


def test_reasoning_and_files_come_back_as_parts(chat, model, conv, live_server):
    model.reply("A tiny picture.")
    picked = [{"type": "file", "mediaType": "image/png", "filename": "dot.png",
               "url": "data:image/png;base64," + base64.b64encode(files.PNG).decode()}]  # fmt: skip
    chat(conv)("send", text="What is this?", files=picked)
    answer = Message.objects.get(conversation=conv, role="assistant")
    answer.provider_items = [{"type": "thinking", "thinking": "A one-pixel PNG.", "signature": "sig"}]
    answer.save(update_fields=["provider_items"])

    question, reply = chat(conv, history=True).opened["messages"]
    text, file = question["parts"]
    assert text == {"type": "text", "text": "What is this?"}
    assert (file["type"], file["mediaType"], file["filename"]) == ("file", "image/png", "dot.png")
    with httpx2.Client(auth=("alice", "pw"), timeout=10) as client:
        assert client.get(file["url"]).content == files.PNG  # an absolute URL the owner reads
    assert [p["type"] for p in reply["parts"]] == ["step-start", "reasoning", "text"]
    assert reply["parts"][1]["text"] == "A one-pixel PNG."

    event = snapshot(live_server.url, conv)
    user, reasoning, assistant = event.messages
    assert [p.type for p in user.content] == ["text", "image"]
    assert user.content[1].source.value == file["url"]
    assert (reasoning.role, reasoning.content) == ("reasoning", "A one-pixel PNG.")
    assert (assistant.role, assistant.content) == ("assistant", "A tiny picture.")


def test_the_history_is_the_owners_only(live_server, chat, model, conv, bob):
    response = history(live_server.url, conv, user=("bob", "pw"))
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert history(live_server.url, conv, protocol="ag-ui", user=("bob", "pw")).status_code == 404
    with httpx2.Client(timeout=10) as anonymous:
        assert anonymous.get(f"{live_server.url}/api/toolcalling/ai-sdk/chat/{conv.pk}/messages").status_code in (
            401,
            403,
        )
    assert history(live_server.url, conv).json() == []
    assert history(live_server.url, conv, protocol="ag-ui").json() == {"type": "MESSAGES_SNAPSHOT", "messages": []}
    with httpx2.Client(auth=("alice", "pw"), timeout=10) as client:
        assert client.get(f"{live_server.url}/api/toolcalling/ai-sdk/chat/not-a-uuid/messages").status_code == 404


def said_aloud(messages: list[Any]) -> list[Any]:
    return [message for message in messages if message.role != "reasoning"]


def test_the_ag_ui_snapshot_has_the_runs_messages_and_a_waiting_calls_interrupt(live_server, model, conv, ops):
    answer = model.call("add", {"a": 2, "b": 3})
    model.reply("Two and three make five.")
    run(live_server.url, run_input(conv.pk, "What is 2 + 3?"))
    model.call("move_points", {"name": "alice", "points": 5})
    events = run(live_server.url, run_input(ops.pk, "Give me five points"))

    # A thinking model's answers come with their reasoning (Anthropic's test model thinks): left aside here.
    user, asked, tool, said = said_aloud(snapshot(live_server.url, conv).messages)
    assert (user.role, user.content) == ("user", "What is 2 + 3?")
    (call,) = asked.tool_calls
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (answer.tool_calls[0].id, "add",
                                                                                   {"a": 2, "b": 3})  # fmt: skip
    assert call.metadata["toolcalling"]["status"] == "succeeded"
    assert (tool.role, tool.tool_call_id, tool.content) == ("tool", call.id, "5")
    assert (said.role, said.content) == ("assistant", "Two and three make five.")

    waiting = ToolCall.objects.get(conversation=ops)
    (interrupt,) = events[-1].outcome.interrupts  # the run's interrupt: the arguments and the preview
    assert interrupt.metadata == {"title": "Move points", "arguments": {"name": "alice", "points": 5},
                                  "approver": "user", "preview": {"value": PREVIEW, "error": ""},
                                  "previewText": PREVIEW}  # fmt: skip
    _, asked = said_aloud(snapshot(live_server.url, ops).messages)
    (call,) = asked.tool_calls
    state = call.metadata["toolcalling"]
    assert (state["id"], state["status"]) == (waiting.pk, "awaiting_approval")
    assert state["interrupt"] == {"id": str(waiting.pk), "reason": "tool_call_approval",
                                  "tool_call_id": waiting.call_id, "message": "Move points",
                                  "metadata": interrupt.metadata}  # fmt: skip


def test_a_staff_call_shows_the_owner_its_arguments_but_not_the_staff_preview(chat, model, ops):
    # The preview is for whoever decides (as the API's ``preview``): for a staff call that is not the owner.
    model.call("bump", {"name": "orders", "by": 2})
    live = chat(ops)("send", text="Bump the orders")
    (part,) = parts(live, "tool-bump")
    assert part["approval"]["descriptor"] == {"title": "Bump", "arguments": {"name": "orders", "by": 2},
                                              "approver": "staff", "preview": None, "previewText": None}  # fmt: skip
    model.assert_done()


def test_an_ag_ui_run_without_messages_connects_to_the_thread(live_server, model, ops):
    # What an AG-UI client that opens a thread sends: no messages, so nothing is posted; it gets the thread.
    model.call("move_points", {"name": "alice", "points": 5})
    run(live_server.url, run_input(ops.pk, "Give me five points"))
    body = {**run_input(ops.pk, "unused"), "messages": [], "runId": "connect"}
    events = run(live_server.url, body)

    assert [e.type for e in events] == [EventType.RUN_STARTED, EventType.MESSAGES_SNAPSHOT, EventType.RUN_FINISHED]
    assert events[1] == snapshot(live_server.url, ops)
    (interrupt,) = events[-1].outcome.interrupts
    assert interrupt.id == str(ToolCall.objects.get(conversation=ops).pk)
    assert Message.objects.filter(conversation=ops, role="user").count() == 1  # nothing was posted
    model.assert_done()
