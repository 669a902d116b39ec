"""A tool call's arguments reach the page as the model writes them, on each model API (the strict servers stream
them in pieces): the AI SDK's ``tool-input-start`` / ``tool-input-delta``, AG-UI's ``TOOL_CALL_ARGS`` and the
app's own ``tool_input_delta`` event. They are shown only: the call runs with the arguments of the whole answer,
validated as before, and arguments that never become valid run nothing."""

import json

import httpx2
import pytest
from ag_ui.core import EventType

from toolcalling.models import Message, ToolCall

from .conftest import chunk_types, parts
from .test_ag_ui import run, run_input

ARGUMENTS = {"a": 1234567, "b": 7654321}


@pytest.mark.each_api
def test_the_ai_sdk_part_streams_its_input_before_it_is_available(chat, model, conv):
    answer = model.call("add", ARGUMENTS)
    model.reply("That makes 8888888.")
    reply = chat(conv)("send", text="Add them")

    assert reply["status"] == "ready", reply
    call_id = answer.tool_calls[0].id
    mine = [c for c in reply["chunks"] if c.get("toolCallId") == call_id]
    kinds = [c["type"] for c in mine]
    assert kinds[0] == "tool-input-start" and kinds.count("tool-input-start") == 1
    assert {"tool-input-delta", "tool-input-available"} <= set(kinds)
    assert kinds.index("tool-input-available") > max(i for i, k in enumerate(kinds) if k == "tool-input-delta")
    written = [c["inputTextDelta"] for c in mine if c["type"] == "tool-input-delta"]
    assert len(written) > 1  # in pieces, as the model wrote them (the first at once, the rest gathered)
    assert json.loads("".join(written)) == ARGUMENTS
    assert (mine[0]["toolName"], mine[0]["title"]) == ("add", "Add")
    (part,) = parts(reply, "tool-add")
    assert (part["state"], part["input"], part["output"]) == ("output-available", ARGUMENTS, 8888888)
    assert chunk_types(reply).count("start-step") == 2
    model.assert_done()


@pytest.mark.each_api
def test_ag_ui_gets_the_arguments_as_tool_call_args_as_they_come(live_server, model, conv):
    answer = model.call("add", ARGUMENTS)
    model.reply("That makes 8888888.")
    events = run(live_server.url, run_input(conv.pk, "Add them"))

    mine = [e for e in events if getattr(e, "tool_call_id", None) == answer.tool_calls[0].id]
    kinds = [e.type for e in mine]
    assert kinds[0] == EventType.TOOL_CALL_START and kinds.count(EventType.TOOL_CALL_START) == 1
    assert kinds[-2:] == [EventType.TOOL_CALL_END, EventType.TOOL_CALL_RESULT]
    args = [e.delta for e in mine if e.type == EventType.TOOL_CALL_ARGS]
    assert len(args) > 1  # in pieces, as the model wrote them (the first at once, the rest gathered)
    assert json.loads("".join(args)) == ARGUMENTS  # each piece once: none sent again when the answer is stored
    assert mine[-1].content == "8888888"
    model.assert_done()


@pytest.mark.each_api
def test_the_apps_own_events_carry_the_pieces(live_server, model, conv):
    answer = model.call("add", ARGUMENTS)
    model.reply("That makes 8888888.")
    url = f"{live_server.url}/api/toolcalling/conversations/{conv.pk}/messages/"
    with httpx2.Client(auth=("alice", "pw"), timeout=30) as client:
        with client.stream("POST", url, json={"content": "Add them"}, headers={"Accept": "text/event-stream"}) as r:
            assert r.status_code == 200
            events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]

    pieces = [e for e in events if e["type"] == "tool_input_delta"]
    assert {(e["call_id"], e["name"]) for e in pieces} == {(answer.tool_calls[0].id, "add")}
    assert json.loads("".join(e["delta"] for e in pieces)) == ARGUMENTS
    kinds = [e["type"] for e in events]
    assert kinds.index("tool_input_delta") < kinds.index("tool_call_started")
    model.assert_done()


@pytest.mark.each_api
def test_arguments_that_never_become_valid_are_shown_and_run_nothing(chat, model, conv):
    model.call("add", '{"a": 1234567, "b": ')  # cut off: never valid JSON
    model.reply("Sorry, my call was broken.")
    reply = chat(conv)("send", text="Add them")

    assert reply["status"] == "ready", reply
    written = "".join(c["inputTextDelta"] for c in reply["chunks"] if c["type"] == "tool-input-delta")
    assert written == '{"a": 1234567, "b": '
    call = ToolCall.objects.get(conversation=conv)
    assert call.status == "failed" and call.started_at is None  # refused before running
    tool_message = Message.objects.get(conversation=conv, role="tool")
    assert tool_message.content != "" and "8888888" not in tool_message.content
    model.assert_done()
