"""Client tools through the AI SDK's own chat client: a call of a tool the browser runs reaches the page as a tool
part without output (no approval asked), the turn waits, and ``addToolOutput`` (by the page, or sent automatically)
answers it; the server takes that output as the waiting call's result only, checked against the tool's schema."""

import pytest
from rest_framework.test import APIClient

from toolcalling.models import Conversation, Message, ToolCall

from .conftest import chunk_types, parts


@pytest.fixture
def picker(alice) -> Conversation:
    return Conversation.objects.create(user=alice, assistant_id="browser")


def ask_for_a_colour(chat, model, picker, **options):
    model.call("pick_color", {"prompt": "Your favourite?"})
    driver = chat(picker, **options)
    waiting = driver("send", text="Pick a colour")
    (part,) = parts(waiting, "tool-pick_color")
    return driver, waiting, part, ToolCall.objects.get(conversation=picker)


@pytest.mark.each_api  # a client call's result replayed to each model API
@pytest.mark.parametrize("auto", [False, "tools"], ids=["sent-by-the-page", "sent-automatically"])
def test_a_client_tool_answered_by_the_client(chat, model, picker, auto):
    driver, waiting, part, call = ask_for_a_colour(chat, model, picker, auto=auto)

    assert (call.status, call.approver) == ("awaiting_approval", "client")
    assert (part["state"], part["input"]) == ("input-available", {"prompt": "Your favourite?"})
    assert "approval" not in part and "tool-approval-request" not in chunk_types(waiting)
    # The page's onToolCall runs it once, with the arguments as validated: one tool-input-available, once gated.
    assert waiting["toolCalls"] == [f"pick_color:{call.call_id}"]
    assert chunk_types(waiting).count("tool-input-available") == 1
    assert part["callProviderMetadata"] == {"toolcalling": {"id": call.pk, "approver": "client"}}
    assert waiting["chunks"][-1]["finishReason"] == "tool-calls"

    model.reply("Teal it is.")
    reply = driver("output", tool="pick_color", toolCallId=part["toolCallId"], output={"color": "teal"})

    assert reply["status"] == "ready", reply
    call.refresh_from_db()
    assert (call.status, call.result, call.decided_by.username) == ("succeeded", '{"color":"teal"}', "alice")
    told = [m for m in model.messages(-1) if m["role"] == "tool"]
    assert told[-1]["content"] == '{"color":"teal"}'
    assert [m["role"] for m in reply["messages"]] == ["user", "assistant"]
    (part,) = parts(reply, "tool-pick_color")
    assert (part["state"], part["output"]) == ("output-available", {"color": "teal"})
    # The stream says so before the model's answer, as the server stored it.
    assert chunk_types(reply).index("tool-output-available") < chunk_types(reply).index("text-start")
    assert parts(reply, "text")[-1]["text"] == "Teal it is."
    assert Conversation.objects.get(pk=picker.pk).status == "idle"
    model.assert_done()


def test_an_error_the_client_reports_is_what_the_model_reads(chat, model, picker):
    driver, _, part, call = ask_for_a_colour(chat, model, picker)
    model.reply("The picker did not open.")
    reply = driver("output", tool="pick_color", toolCallId=part["toolCallId"], errorText="no picker on this page")

    assert reply["status"] == "ready", reply
    call.refresh_from_db()
    assert (call.status, call.result) == ("failed", "Error: no picker on this page")
    assert parts(reply, "text")[-1]["text"] == "The picker did not open."
    model.assert_done()


def test_an_output_against_the_tools_schema_is_refused_and_the_call_still_waits(chat, model, picker):
    driver, _, part, call = ask_for_a_colour(chat, model, picker)
    reply = driver("output", tool="pick_color", toolCallId=part["toolCallId"], output={"colour": "teal"})

    assert reply["status"] == "error"
    assert "'color' is a required property" in reply["error"]
    call.refresh_from_db()
    assert (call.status, call.result) == ("awaiting_approval", "")
    assert len(model.requests) == 1  # the model was not asked again


def test_a_second_output_for_an_answered_call_changes_nothing(chat, model, picker):
    driver, _, part, call = ask_for_a_colour(chat, model, picker)
    model.reply("Teal it is.")
    driver("output", tool="pick_color", toolCallId=part["toolCallId"], output={"color": "teal"})

    again = driver("output", tool="pick_color", toolCallId=part["toolCallId"], output={"color": "red"})

    assert again["status"] == "ready", again
    call.refresh_from_db()
    assert call.result == '{"color":"teal"}'
    assert Message.objects.get(role="tool", tool_call_id=call.call_id).content == '{"color":"teal"}'
    assert len(model.requests) == 2  # nothing more was asked
    model.assert_done()


def test_another_users_output_for_the_call_is_refused(chat, model, picker, bob):
    _, waiting, part, call = ask_for_a_colour(chat, model, picker)
    client = APIClient()
    client.force_authenticate(bob)
    body = {"id": str(picker.pk), "trigger": "submit-message",
            "messages": [{"id": "a", "role": "assistant", "parts": [{**part, "state": "output-available",
                                                                     "output": {"color": "red"}}]}]}  # fmt: skip
    response = client.post("/api/toolcalling/ai-sdk/chat", body, format="json")

    assert response.status_code == 404, response.content
    call.refresh_from_db()
    assert call.status == "awaiting_approval"


def test_a_page_opened_later_answers_the_waiting_call(chat, model, picker):
    ask_for_a_colour(chat, model, picker)
    later = chat(picker, history=True)
    (part,) = [p for p in later.opened["messages"][-1]["parts"] if p["type"] == "tool-pick_color"]
    assert (part["state"], part["input"]) == ("input-available", {"prompt": "Your favourite?"})
    assert "approval" not in part

    model.reply("Teal it is.")
    reply = later("output", tool="pick_color", toolCallId=part["toolCallId"], output={"color": "teal"})

    assert reply["status"] == "ready", reply
    assert parts(reply, "text")[-1]["text"] == "Teal it is."
    model.assert_done()


def test_a_client_call_with_invalid_arguments_never_reaches_the_pages_tool_handler(chat, model, picker):
    model.call("pick_color", {"question": "?"})
    model.reply("Sorry, I asked wrongly.")
    driver = chat(picker)
    reply = driver("send", text="Pick a colour")

    assert reply["toolCalls"] == []  # answered with the error on the server: nothing for the page to run
    (part,) = parts(reply, "tool-pick_color")
    assert part["state"] == "output-error" and "'prompt' is a required property" in part["errorText"]
    assert parts(reply, "text")[-1]["text"] == "Sorry, I asked wrongly."
    model.assert_done()
