"""Client tools over AG-UI, read with ag-ui-protocol's own types: a call of a tool the frontend runs (declared on the
assistant, or sent with the run as CopilotKit's actions are, when the assistant accepts them) ends the run with its
tool call events and no result; the frontend's tool message in the next run is the call's result."""

import json

import httpx2
import pytest
from ag_ui.core import EventType, RunAgentInput

from toolcalling.models import Conversation, ToolCall

from .test_ag_ui import CLIENT_TOOL, run, run_input, types


@pytest.fixture
def picker(alice) -> Conversation:
    return Conversation.objects.create(user=alice, assistant_id="browser")


def answer_input(thread_id, call, content, *, run_id="run-2", tools=(), **extra):
    """The next run as an AG-UI client sends it once its tool ran: the history, then the tool's message."""
    arguments = json.dumps(call.arguments)
    messages = [
        {"id": "u1", "role": "user", "content": "go"},
        {"id": "a1", "role": "assistant", "toolCalls": [
            {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": arguments}}]},
        {"id": "t1", "role": "tool", "toolCallId": call.call_id, "content": content, **extra},
    ]  # fmt: skip
    body = {"threadId": str(thread_id), "runId": run_id, "state": {}, "context": [], "forwardedProps": {},
            "messages": messages, "tools": list(tools)}  # fmt: skip
    RunAgentInput.model_validate(body)
    return body


def test_a_declared_client_tools_call_ends_the_run_and_the_tool_message_answers_it(live_server, model, picker):
    model.call("pick_color", {"prompt": "Your favourite?"})
    events = run(live_server.url, run_input(picker.pk, "Pick a colour"))

    call = ToolCall.objects.get(conversation=picker)
    assert (call.status, call.approver) == ("awaiting_approval", "client")
    start, *args, end = [e for e in events if e.type.name.startswith("TOOL_CALL")]
    assert (start.type, start.tool_call_name, end.type) == (EventType.TOOL_CALL_START, "pick_color",
                                                            EventType.TOOL_CALL_END)  # fmt: skip
    assert json.loads("".join(e.delta for e in args)) == {"prompt": "Your favourite?"}
    assert events[-1].type == EventType.RUN_FINISHED and events[-1].outcome.type == "success"  # no interrupt

    model.reply("Teal it is.")
    events = run(live_server.url, answer_input(picker.pk, call, '{"color": "teal"}'))

    call.refresh_from_db()
    assert (call.status, call.result) == ("succeeded", '{"color":"teal"}')
    (result,) = [e for e in events if e.type == EventType.TOOL_CALL_RESULT]
    assert (result.tool_call_id, result.content) == (call.call_id, '{"color":"teal"}')
    text = [e for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT]
    assert "".join(e.delta for e in text) == "Teal it is."
    assert types(events)[-1] == EventType.RUN_FINISHED
    model.assert_done()


def test_a_tool_the_frontend_sends_is_offered_when_the_assistant_accepts_them(live_server, model, picker):
    model.call("change_background", {"color": "teal"})
    events = run(live_server.url, run_input(picker.pk, "Paint it teal", tools=[CLIENT_TOOL]))

    offered = model.tool_definitions(0)
    assert offered["change_background"]["description"] == "Paint the page."
    call = ToolCall.objects.get(conversation=picker)
    assert (call.name, call.status, call.approver) == ("change_background", "awaiting_approval", "client")
    assert events[-1].outcome.type == "success"

    model.reply("The page is teal now.")
    events = run(live_server.url, answer_input(picker.pk, call, "painted", tools=[CLIENT_TOOL]))

    call.refresh_from_db()
    assert (call.status, call.result) == ("succeeded", "painted")
    # The continuation asked the model with the frontend's tool still offered.
    assert "change_background" in model.tools(-1)
    assert types(events)[-1] == EventType.RUN_FINISHED
    model.assert_done()


def test_a_frontend_tool_never_shadows_a_server_tool(live_server, model, picker):
    model.reply("Nothing to do.")
    shadow = {"name": "bump", "description": "A harmless bump in the page.", "parameters": {"type": "object"}}
    run(live_server.url, run_input(picker.pk, "Bump", tools=[shadow, CLIENT_TOOL]))

    assert model.tools(0).count("bump") == 1
    assert model.tool_definitions(0)["bump"]["description"].startswith("Add to a named counter")
    model.assert_done()


def test_an_error_in_the_tool_message_is_what_the_model_reads(live_server, model, picker):
    model.call("pick_color", {"prompt": "?"})
    run(live_server.url, run_input(picker.pk, "Pick a colour"))
    call = ToolCall.objects.get(conversation=picker)

    model.reply("The picker failed.")
    run(live_server.url, answer_input(picker.pk, call, "", error="the picker would not open"))

    call.refresh_from_db()
    assert (call.status, call.result) == ("failed", "Error: the picker would not open")
    model.assert_done()


def post(base, body, user):
    with httpx2.Client(auth=user, timeout=30) as client:
        return client.post(f"{base}/api/toolcalling/ag-ui/", json=body, headers={"Accept": "text/event-stream"})


def test_a_result_against_the_schema_another_users_and_a_second_one_are_refused(live_server, model, picker, bob):
    model.call("pick_color", {"prompt": "?"})
    run(live_server.url, run_input(picker.pk, "Pick a colour"))
    call = ToolCall.objects.get(conversation=picker)

    wrong = post(live_server.url, answer_input(picker.pk, call, '{"colour": "teal"}'), ("alice", "pw"))
    assert wrong.status_code == 400, wrong.text
    assert wrong.json()["result"] == ["(result): 'color' is a required property"]
    others = post(live_server.url, answer_input(picker.pk, call, '{"color": "red"}'), ("bob", "pw"))
    assert others.status_code == 404, others.text
    call.refresh_from_db()
    assert call.status == "awaiting_approval"

    model.reply("Teal it is.")
    run(live_server.url, answer_input(picker.pk, call, '{"color": "teal"}'))
    again = run(live_server.url, answer_input(picker.pk, call, '{"color": "red"}', run_id="run-3"))

    call.refresh_from_db()
    assert call.result == '{"color":"teal"}'  # the second result is not taken, nor the model asked again
    assert types(again) == [EventType.RUN_STARTED, EventType.RUN_FINISHED]
    model.assert_done()


def test_a_frontend_tool_no_stream_or_database_can_carry_is_refused_before_anything_runs(live_server, picker):
    """A lone surrogate is valid JSON but no UTF-8 stream or database carries it: the run is a 400 on ``input``,
    not a 500, and nothing is stored (found by tests/integrity/test_every_body.py)."""
    tool = {"name": "paint", "description": "Paint \ud800 the page.", "parameters": {"type": "object"}}
    body = run_input(picker.pk, "Paint it", tools=[tool])
    with httpx2.Client(auth=("alice", "pw"), timeout=30) as client:
        # json.dumps escapes it (``"\\ud800"``), as a JavaScript client's JSON.stringify does.
        response = client.post(f"{live_server.url}/api/toolcalling/ag-ui/", content=json.dumps(body),
                               headers={"Content-Type": "application/json"})  # fmt: skip
    assert response.status_code == 400, response.text
    assert "tools" in response.json()["input"][0]
    picker.refresh_from_db()
    assert not picker.messages.exists() and picker.state == {}
