"""The site's tools for MCP clients: the SDK's client over Streamable HTTP against a live test server of the site."""

import json

import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from mcp.shared.exceptions import MCPError
from rest_framework.test import APIClient

from toolcalling import approval
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.toolkit import tools as tool_registry

from .helpers import basic, text_of, with_client

pytestmark = pytest.mark.django_db(transaction=True)

CLIENT_INFO = {"name": "raw-test", "version": "1"}


@pytest.fixture
def endpoint(live_server):
    return f"{live_server.url}/api/toolcalling/mcp/helper/"


@pytest.fixture
def staff(db):
    user = get_user_model().objects.create_user("sam", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="view_user", content_type__app_label="auth"))
    return user


def list_tools(endpoint, username):
    async def use(client):
        return (await client.list_tools()).tools

    return {t.name: t for t in with_client(endpoint, basic(username), use)}


def call(endpoint, username, name, arguments):
    async def use(client):
        return await client.call_tool(name, arguments)

    return with_client(endpoint, basic(username), use)


def test_tools_list_is_what_the_model_gets_for_that_user(endpoint, alice, staff):
    alices = list_tools(endpoint, "alice")
    assert set(alices) == {
        "whoami",
        "add",
        "ship",
        "explode",
        "direct_answer",
        "delete_everything",
        "get_tool_call_status",
    }  # list_users needs auth.view_user, which alice lacks
    ship = tool_registry.get("ship")
    assert alices["ship"].input_schema == ship.parameters  # the same schema the model is sent
    assert alices["ship"].description == ship.description
    assert "list_users" in list_tools(endpoint, "sam")


def test_a_call_takes_the_chat_path_and_is_stored_for_the_admin(endpoint, alice, staff, client):
    result = call(endpoint, "alice", "whoami", {})
    assert not result.is_error
    assert json.loads(text_of(result)) == {"username": "alice", "tenant": "acme"}  # ToolContext of the user
    tool_call = ToolCall.objects.get(name="whoami")
    conversation = tool_call.conversation
    assert (conversation.user, conversation.assistant_id, conversation.status) == (alice, "helper", "idle")
    assert conversation.origin == "mcp"  # no model asked for the call, and none is asked about its result
    messages = list(conversation.messages.order_by("id"))
    assert [(m.role, m.model) for m in messages] == [("assistant", ""), ("tool", "")]
    assert messages[1].tool_call_id == tool_call.call_id  # answered right after, as the API requires
    assert tool_call.status == "succeeded"
    admin = get_user_model().objects.create_superuser("root", password="pw")
    client.force_login(admin)
    page = client.get(f"/admin/toolcalling/toolcall/{tool_call.pk}/change/").content.decode()
    assert "whoami" in page and "alice" in page


def test_tool_errors_are_error_results_and_unknown_tools_protocol_errors(endpoint, alice):
    invalid = call(endpoint, "alice", "add", {"a": "one", "b": 2})
    assert invalid.is_error and "invalid arguments for add" in text_of(invalid)
    failed = call(endpoint, "alice", "explode", {})
    assert failed.is_error and text_of(failed) == "Error: RuntimeError: boom"
    assert list(ToolCall.objects.order_by("id").values_list("name", "status")) == [
        ("add", "failed"),
        ("explode", "failed"),
    ]
    with pytest.raises(MCPError, match="Unknown tool: list_users"):  # hidden by permissions: not callable either
        call(endpoint, "alice", "list_users", {})


def test_an_unauthenticated_client_gets_401_with_a_challenge(endpoint, alice):
    raw = httpx2.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert raw.status_code == 401
    assert raw.headers["WWW-Authenticate"] == 'Basic realm="api"'
    with pytest.raises(MCPError):
        list_tools_anonymous(endpoint)
    wrong = httpx2.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=basic("alice", "nope"))
    assert wrong.status_code == 401


def list_tools_anonymous(endpoint):
    async def use(client):
        return await client.list_tools()

    return with_client(endpoint, {}, use)


def test_the_assistants_permission_decides_access(live_server, alice, staff, make_assistant):
    make_assistant(id="staff-only", tools=["add"], permission="auth.view_user")
    url = f"{live_server.url}/api/toolcalling/mcp/staff-only/"
    denied = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=basic("alice"))
    assert denied.status_code == 403
    assert denied.json()["code"] == "permission_denied"
    assert set(list_tools(url, "sam")) == {"add", "get_tool_call_status"}
    missing = httpx2.post(f"{live_server.url}/api/toolcalling/mcp/nope/", json={}, headers=basic("alice"))
    assert missing.status_code == 404


def test_session_authentication_needs_the_csrf_token(alice):
    browser = APIClient(enforce_csrf_checks=True)
    browser.login(username="alice", password="pw")
    ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    assert browser.post("/api/toolcalling/mcp/helper/", ping, format="json").status_code == 403
    browser.get("/admin/login/")  # sets the CSRF cookie
    token = browser.cookies["csrftoken"].value
    answer = browser.post("/api/toolcalling/mcp/helper/", ping, format="json", HTTP_X_CSRFTOKEN=token)
    assert answer.status_code == 200 and answer.json() == {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_transport_rules_of_a_stateless_server(endpoint, alice):
    headers = basic("alice")
    assert httpx2.get(endpoint, headers=headers).status_code == 405  # no server-to-client stream
    assert httpx2.delete(endpoint, headers=headers).status_code == 405  # no sessions to end
    note = httpx2.post(endpoint, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    assert note.status_code == 202 and note.content == b""
    bad = httpx2.post(endpoint, content=b"{not json", headers={**headers, "Content-Type": "application/json"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == -32700
    newer = {**headers, "MCP-Protocol-Version": "2999-01-01"}
    refused = httpx2.post(endpoint, json={"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers=newer)
    assert refused.status_code == 400 and "2025-11-25" in refused.json()["error"]["data"]["supported"]
    init = httpx2.post(
        endpoint,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": CLIENT_INFO},
        },
        headers=headers,
    )
    assert init.json()["result"]["protocolVersion"] == "2025-03-26"
    batch = [{"jsonrpc": "2.0", "id": 4, "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/x"}, [1]]
    answers = httpx2.post(endpoint, json=batch, headers=headers).json()  # batches as the 2025-03-26 revision has them
    assert [a.get("result", a.get("error", {}).get("code")) for a in answers] == [{}, -32600]
    assert "mcp-session-id" not in init.headers  # stateless: any worker answers the next request


def test_a_gated_call_waits_for_approval_and_its_outcome_can_be_read_later(endpoint, alice, db):
    waiting = call(endpoint, "alice", "delete_everything", {"confirm": "yes"})
    assert not waiting.is_error
    call_id = waiting.structured_content["tool_call_id"]
    assert waiting.structured_content["status"] == "awaiting_approval"
    assert f'"tool_call_id": {call_id}' in text_of(waiting)
    stored = ToolCall.objects.get(pk=call_id)
    assert stored.status == "awaiting_approval" and stored.conversation.status == "awaiting_approval"
    assert (
        json.loads(text_of(call(endpoint, "alice", "get_tool_call_status", {"tool_call_id": call_id})))["status"]
        == "awaiting_approval"
    )

    approver = get_user_model().objects.create_user("carol", password="pw", is_staff=True)
    approver.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    approval.approve(stored, get_user_model().objects.get(pk=approver.pk))  # eager Celery runs it on commit

    status = call(endpoint, "alice", "get_tool_call_status", {"tool_call_id": call_id})
    assert status.structured_content == {
        "tool_call_id": call_id,
        "tool": "delete_everything",
        "status": "succeeded",
        "result": "deleted for alice (yes)",
    }
    conversation = Conversation.objects.get(pk=stored.conversation_id)
    assert conversation.status == "idle"  # over: no model asked for the call, so none is asked now
    assert Message.objects.filter(conversation=conversation, role="assistant").count() == 1  # the client's call
    other = call(endpoint, "alice", "get_tool_call_status", {"tool_call_id": call_id + 1000})
    assert other.is_error


def test_client_tools_are_not_served_to_mcp_clients(live_server, alice):
    # A tool that runs in the browser has no browser to run in here: neither listed nor callable.
    browser_endpoint = f"{live_server.url}/api/toolcalling/mcp/browser/"
    assert "pick_color" not in list_tools(browser_endpoint, "alice")
    with pytest.raises(MCPError):
        call(browser_endpoint, "alice", "pick_color", {"prompt": "?"})
    assert not ToolCall.objects.filter(name="pick_color").exists()
