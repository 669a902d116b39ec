"""Client tools through the REST API: declared on an assistant (no Python body), offered to the model, their call
waits for the result the conversation's owner's client sends to ``POST tool-calls/{id}/result/``, checked against
the tool's schema, stored once, and the conversation goes on."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from toolcalling import Assistant, ClientTool, approval
from toolcalling.exceptions import DecisionNotAllowed, ImproperlyDefined
from toolcalling.models import Conversation, Message, ToolCall

URL = "/api/toolcalling/"


@pytest.fixture
def conv(api) -> dict:
    response = api.post(f"{URL}conversations/", {"assistant": "browser"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def waiting(api, conv, model) -> ToolCall:
    """alice's turn stopped at a call of the client tool ``pick_color``."""
    model.call("pick_color", {"prompt": "Your favourite?"})
    response = api.post(f"{URL}conversations/{conv['id']}/messages/", {"content": "pick one"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "awaiting_approval"
    return ToolCall.objects.get(conversation_id=conv["id"])


def result_url(call: ToolCall) -> str:
    return f"{URL}tool-calls/{call.pk}/result/"


def test_a_client_tool_is_offered_to_the_model_beside_the_server_tools(waiting, model):
    assert model.tools(0) == ["bump", "move_points", "pick_color"]
    offered = model.tool_definitions(0)["pick_color"]
    assert offered["description"] == "Ask the user to pick a colour on the page."
    assert offered["parameters"]["required"] == ["prompt"]


def test_its_call_waits_for_the_client_and_the_rest_api_shows_it(api, waiting):
    assert (waiting.status, waiting.approver, waiting.requires_approval) == ("awaiting_approval", "client", True)
    listed = api.get(f"{URL}tool-calls/", {"status": "awaiting_approval"}).json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [(r["id"], r["approver"], r["arguments"]) for r in rows] == [
        (waiting.pk, "client", {"prompt": "Your favourite?"})
    ]
    assert not Message.objects.filter(role="tool", tool_call_id=waiting.call_id).exists()


@pytest.mark.each_api  # a client call's result replayed to each model API
def test_the_owner_sends_the_result_and_the_turn_goes_on(api, conv, waiting, model, django_capture_on_commit_callbacks):
    model.reply("Teal it is.")
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(result_url(waiting), {"result": {"color": "teal"}}, format="json")

    assert response.status_code == 200, response.content
    assert (response.json()["status"], response.json()["result"]) == ("succeeded", '{"color":"teal"}')
    waiting.refresh_from_db()
    assert waiting.decided_by.get_username() == "alice"
    told = [m for m in model.messages(-1) if m["role"] == "tool"]
    assert told[-1]["content"] == '{"color":"teal"}'
    assert Conversation.objects.get(pk=conv["id"]).status == "idle"
    assert Message.objects.filter(conversation_id=conv["id"]).last().content == "Teal it is."
    model.assert_done()


def test_an_error_from_the_client_is_what_the_model_reads(api, waiting, model, django_capture_on_commit_callbacks):
    model.reply("The picker failed.")
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(result_url(waiting), {"error": "the user closed the picker"}, format="json")
    assert response.status_code == 200, response.content
    waiting.refresh_from_db()
    assert (waiting.status, waiting.result) == ("failed", "Error: the user closed the picker")
    model.assert_done()


def test_a_result_against_the_schema_is_refused_and_nothing_is_stored(api, waiting):
    response = api.post(result_url(waiting), {"result": {"colour": "teal"}}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["result"] == ["(result): 'color' is a required property"]
    waiting.refresh_from_db()
    assert (waiting.status, waiting.result) == ("awaiting_approval", "")


@pytest.mark.parametrize("body", [{}, {"result": 1, "error": "x"}], ids=["nothing", "both"])
def test_a_body_with_neither_or_both_is_refused(api, waiting, body):
    response = api.post(result_url(waiting), body, format="json")
    assert response.status_code == 400, response.content
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"


def test_a_second_result_is_refused(api, waiting, model, django_capture_on_commit_callbacks):
    model.reply("Teal it is.")
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(result_url(waiting), {"result": {"color": "teal"}}, format="json").status_code == 200
    again = api.post(result_url(waiting), {"result": {"color": "red"}}, format="json")
    assert again.status_code == 409, again.content
    assert (again.json()["code"], again.json()["status"]) == ("already_decided", "succeeded")
    waiting.refresh_from_db()
    assert waiting.result == '{"color":"teal"}'


def test_another_user_cannot_see_or_answer_the_call(waiting, bob):
    client = APIClient()
    client.force_authenticate(bob)
    response = client.post(result_url(waiting), {"result": {"color": "red"}}, format="json")
    assert response.status_code == 404, response.content
    with pytest.raises(DecisionNotAllowed):
        approval.answer_client_call(waiting, bob, result={"color": "red"})
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"


def test_a_staff_member_who_sees_the_call_may_not_answer_or_approve_it(waiting):
    staff = get_user_model().objects.create_user("carol", password="pw")
    staff.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    client = APIClient()
    client.force_authenticate(staff)
    response = client.post(result_url(waiting), {"result": {"color": "red"}}, format="json")
    assert (response.status_code, response.json()["code"]) == (403, "permission_denied")
    approve = client.post(f"{URL}tool-calls/{waiting.pk}/approve/", {}, format="json")
    assert approve.status_code == 403, approve.content
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"


def test_the_owner_may_not_approve_it_to_run_on_the_server(api, waiting):
    response = api.post(f"{URL}tool-calls/{waiting.pk}/approve/", {}, format="json")
    assert response.status_code == 403, response.content
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"


def test_a_call_of_a_server_tool_is_not_answered_with_a_result(api, conv, model):
    model.call("move_points", {"name": "alice", "points": 1})
    api.post(f"{URL}conversations/{conv['id']}/messages/", {"content": "points"}, format="json")
    call = ToolCall.objects.get(conversation_id=conv["id"])
    assert call.approver == "user"
    response = api.post(result_url(call), {"result": "done"}, format="json")
    assert response.status_code == 403, response.content
    call.refresh_from_db()
    assert call.status == "awaiting_approval"


def test_the_owner_may_decline_or_cancel_it_instead(api, conv, waiting, model, django_capture_on_commit_callbacks):
    model.reply("No colour then.")
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"{URL}tool-calls/{waiting.pk}/reject/", {"reason": "not now"}, format="json")
    assert response.status_code == 200, response.content
    waiting.refresh_from_db()
    assert waiting.result == "Not run: the user declined this call. Reason: not now"
    again = api.post(result_url(waiting), {"result": {"color": "teal"}}, format="json")
    assert again.status_code == 409


def test_cancelling_withdraws_the_waiting_call(api, conv, waiting):
    response = api.post(f"{URL}conversations/{conv['id']}/cancel/", {}, format="json")
    assert response.status_code == 200, response.content
    waiting.refresh_from_db()
    assert waiting.status == "cancelled"
    late = api.post(result_url(waiting), {"result": {"color": "teal"}}, format="json")
    assert (late.status_code, late.json()["code"]) == (409, "already_decided")


def test_arguments_against_the_schema_go_back_to_the_model(api, conv, model):
    model.call("pick_color", {"question": "?"})
    model.reply("Sorry.")
    api.post(f"{URL}conversations/{conv['id']}/messages/", {"content": "pick"}, format="json")
    call = ToolCall.objects.get(conversation_id=conv["id"])
    assert call.status == "failed"
    assert "'prompt' is a required property" in call.result
    model.assert_done()


def test_a_client_tool_is_checked_when_it_is_declared():
    with pytest.raises(ImproperlyDefined, match="parameters must be the schema of an object"):
        ClientTool(name="x", description="An x.", parameters={"type": "string"})
    with pytest.raises(ImproperlyDefined, match="result_schema is not a valid JSON schema"):
        ClientTool(name="x", description="An x.", result_schema={"type": 5})
    with pytest.raises(ImproperlyDefined, match=r"client tool has the name of another tool \(bump\)"):

        class Clash(Assistant):
            id = "clash"
            tools = ["bump"]
            client_tools = [ClientTool(name="bump", description="A bump in the browser.")]


@pytest.mark.toolcalling(MAX_CALLS_PER_TOOL=1)
def test_the_call_limits_count_client_calls(api, conv, model, django_capture_on_commit_callbacks):
    model.calls(("pick_color", {"prompt": "first?"}), ("pick_color", {"prompt": "second?"}))
    body = api.post(f"{URL}conversations/{conv['id']}/messages/", {"content": "two"}, format="json").json()
    assert body["status"] == "awaiting_approval"
    first, second = ToolCall.objects.filter(conversation_id=conv["id"]).order_by("index")
    assert (first.status, second.status) == ("awaiting_approval", "failed")
    assert second.result == "Error: not run, the limit is at most 1 calls to 'pick_color' per turn."

    model.reply("One colour only.")
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(result_url(first), {"result": {"color": "teal"}}, format="json").status_code == 200
    assert Conversation.objects.get(pk=conv["id"]).status == "idle"
    model.assert_done()


def test_a_busy_conversation_says_the_call_waits_for_the_user(api, conv, waiting):
    response = api.post(f"{URL}conversations/{conv['id']}/messages/", {"content": "hello?"}, format="json")
    assert (response.status_code, response.json()["code"]) == (409, "conversation_busy")
    assert response.json()["detail"] == "A tool call waits for you to confirm or decline it first."


def test_the_tools_a_frontend_sent_are_offered_only_by_an_assistant_that_accepts_them(alice):
    sent = [
        {"name": "notify", "description": "Show a note.", "parameters": {"properties": {"text": {"type": "string"}}}},
        {"name": "bump", "description": "Shadows a server tool.", "parameters": {"type": "object"}},
        {"name": "bad name", "description": "Not a name.", "parameters": {}},
        {"name": "scalar", "description": "Not an object.", "parameters": {"type": "string"}},
    ]
    accepting = Conversation.objects.create(user=alice, assistant_id="browser", state={"frontend_tools": sent})
    assistant = Assistant.get("browser")
    offered = {t.name: t for t in assistant.get_tools(assistant.build_context(alice, accepting))}
    assert list(offered) == ["bump", "move_points", "pick_color", "notify"]
    assert not isinstance(offered["bump"], ClientTool)  # the site's tool, never the frontend's
    assert offered["notify"].parameters == {"type": "object", "properties": {"text": {"type": "string"}}}
    assert offered["notify"].from_request and offered["notify"].approver == "client"

    refusing = Assistant.get("ops")
    ops = Conversation.objects.create(user=alice, assistant_id="ops", state={"frontend_tools": sent})
    assert "notify" not in {t.name for t in refusing.get_tools(refusing.build_context(alice, ops))}
