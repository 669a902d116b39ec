"""``POST ag-ui/``: a run's every event, as it comes over the wire, validates against ag-ui-protocol's own types."""

import json

import httpx2
import pytest
from ag_ui.core import Event, EventType, RunAgentInput
from pydantic import TypeAdapter

from tests.approvalapp.models import Counter
from toolcalling.models import Conversation, Message, ToolCall

EVENTS = TypeAdapter(Event)
CLIENT_TOOL = {"name": "change_background", "description": "Paint the page.",
               "parameters": {"type": "object", "properties": {"color": {"type": "string"}}}}  # fmt: skip


def run_input(thread_id, text, **extra):
    body = {"threadId": str(thread_id), "runId": "run-1", "state": {}, "context": [], "forwardedProps": {},
            "messages": [{"id": "u1", "role": "user", "content": text}], "tools": [], **extra}  # fmt: skip
    RunAgentInput.model_validate(body)  # what an AG-UI client sends, by the package's own reading
    return body


def run(base, body, *, user=("alice", "pw")):
    """The run's events, each parsed by ag-ui-protocol's discriminated ``Event`` type."""
    with httpx2.Client(auth=user, timeout=30) as client:
        # As AG-UI's HttpAgent asks for it.
        headers = {"Accept": "text/event-stream"}
        with client.stream("POST", f"{base}/api/toolcalling/ag-ui/", json=body, headers=headers) as response:
            assert response.status_code == 200, response.read()
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    return [EVENTS.validate_python(json.loads(line.removeprefix("data: "))) for line in lines]


def types(events):
    return [e.type for e in events]


@pytest.mark.each_api
def test_a_run_with_a_tool_call_is_valid_ag_ui_and_ignores_the_clients_tools(live_server, model, conv):
    answer = model.call("add", {"a": 2, "b": 3})
    model.reply("Two and three make five.")
    events = run(live_server.url, run_input(conv.pk, "What is 2 + 3?", tools=[CLIENT_TOOL]))

    assert types(events)[0] == EventType.RUN_STARTED and types(events)[-1] == EventType.RUN_FINISHED
    assert (events[0].thread_id, events[0].run_id) == (str(conv.pk), "run-1")
    start, args, end, result = [e for e in events if e.type.name.startswith("TOOL_CALL")]
    assert (start.type, start.tool_call_id, start.tool_call_name) == (EventType.TOOL_CALL_START,
                                                                      answer.tool_calls[0].id, "add")  # fmt: skip
    assert json.loads(args.delta) == {"a": 2, "b": 3} and end.tool_call_id == start.tool_call_id
    assert (result.type, result.content) == (EventType.TOOL_CALL_RESULT, "5")
    stored = Message.objects.filter(conversation=conv).order_by("id")
    assert result.message_id == str(stored.filter(role="tool").get().pk)
    text = [e for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT]
    assert "".join(e.delta for e in text) == stored.last().content == "Two and three make five."
    assert types(events).count(EventType.TEXT_MESSAGE_START) == 1 == types(events).count(EventType.TEXT_MESSAGE_END)
    assert events[-1].outcome.type == "success"
    # The client's own tool is never offered to the model: the assistant's server-side tools only.
    offered = json.dumps([r.get("tools") for r in model.requests])
    assert "change_background" not in offered and '"add"' in offered
    model.assert_done()


def test_a_run_that_waits_for_approval_finishes_with_an_interrupt(live_server, model, conv):
    model.call("delete_everything", {"confirm": "yes"})
    events = run(live_server.url, run_input(conv.pk, "Delete it all"))

    call = ToolCall.objects.get(conversation=conv)
    assert call.status == "awaiting_approval"
    finished = events[-1]
    assert finished.type == EventType.RUN_FINISHED and finished.outcome.type == "interrupt"
    (interrupt,) = finished.outcome.interrupts
    assert (interrupt.id, interrupt.tool_call_id, interrupt.reason) == (str(call.pk), call.call_id,
                                                                        "tool_call_approval")  # fmt: skip
    assert EventType.TOOL_CALL_RESULT not in types(events)


def test_a_failing_model_is_a_run_error_with_the_apps_code(live_server, model, conv):
    model.error(500, "The engine is on fire.")
    events = run(live_server.url, run_input(conv.pk, "hello"))

    assert types(events) == [EventType.RUN_STARTED, EventType.RUN_ERROR]
    assert events[-1].code == "model_error" and "engine is on fire" in events[-1].message
    conv.refresh_from_db()
    assert conv.status == "failed"  # stored before the client heard of the error


def test_another_users_thread_bad_input_and_anonymous_are_refused(live_server, model, conv, bob):
    theirs = Conversation.objects.create(user=bob, assistant_id="helper")
    url = f"{live_server.url}/api/toolcalling/ag-ui/"
    with httpx2.Client(auth=("alice", "pw"), timeout=10) as client:
        other = client.post(url, json=run_input(theirs.pk, "hi"), headers={"Accept": "text/event-stream"})
        assert other.status_code == 404 and other.json()["code"] == "not_found"
        bad = client.post(url, json={"threadId": str(conv.pk)})
        assert bad.status_code == 400 and any("runId" in text for text in bad.json()["input"])
        no_text = client.post(url, json=run_input(conv.pk, "   "))
        assert no_text.status_code == 400 and "content" in no_text.json()
    with httpx2.Client(timeout=10) as anonymous:
        assert anonymous.post(url, json=run_input(conv.pk, "hi")).status_code in (401, 403)
    assert not Message.objects.exists()
    assert model.requests == []


@pytest.mark.each_api  # a history replayed across a decision, on each API in every pass
@pytest.mark.parametrize("approved", [True, False], ids=["confirmed", "declined"])
def test_a_run_resumed_with_the_users_answer_decides_their_call(live_server, model, alice, approved):
    ops = Conversation.objects.create(user=alice, assistant_id="ops")
    model.call("move_points", {"name": "alice", "points": 5})
    waiting = run(live_server.url, run_input(ops.pk, "Give me five points"))
    (interrupt,) = waiting[-1].outcome.interrupts
    assert interrupt.metadata == {"approver": "user"}

    model.reply("Done." if approved else "Understood, nothing moved.")
    payload = {"approved": True} if approved else {"approved": False, "reason": "not now"}
    resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": payload}]
    events = run(live_server.url, run_input(ops.pk, "", runId="run-2", resume=resume))

    call = ToolCall.objects.get(conversation=ops)
    assert call.status == ("succeeded" if approved else "rejected") and call.decided_by == alice
    assert Counter.objects.filter(name="alice", value=5).exists() == approved
    (result,) = [e for e in events if e.type == EventType.TOOL_CALL_RESULT]
    expected = "alice got 5 points for alice" if approved else "Not run: the user declined this call. Reason: not now"
    assert (result.tool_call_id, result.content) == (call.call_id, expected)
    assert types(events)[0] == EventType.RUN_STARTED and events[-1].type == EventType.RUN_FINISHED
    assert events[-1].run_id == "run-2" and events[-1].outcome.type == "success"
    model.assert_done()
