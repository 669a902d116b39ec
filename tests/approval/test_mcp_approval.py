"""A gated tool called over MCP waits for a staff member, is approved in the admin, and a real Celery worker
runs it once; the MCP client reads the outcome with ``get_tool_call_status``."""

import json
import os

from tests import asgi_server
from tests.approvalapp.models import Counter
from tests.mcp.helpers import basic, with_client
from tests.services import wait_until
from toolcalling.models import Conversation, ToolCall


def call(url, name, arguments):
    async def use(client):
        return await client.call_tool(name, arguments)

    return with_client(url, basic("alice"), use)


def test_gated_call_over_mcp_is_approved_in_the_admin_and_run_by_the_worker(live_server, alice, approver, worker):
    url = f"{live_server.url}/api/toolcalling/mcp/ops/"
    waiting = call(url, "bump", {"name": "mcp", "by": 3})
    call_id = waiting.structured_content["tool_call_id"]
    assert ToolCall.objects.get(pk=call_id).status == "awaiting_approval"
    assert Counter.objects.filter(name="mcp").count() == 0  # not run in the request

    admin = asgi_server.client()
    admin.force_login(approver)
    data = {"action": "approve_selected", "_selected_action": [call_id]}
    page = admin.post("/admin/toolcalling/toolcall/", data, follow=True).content.decode()
    assert "Approved 1 tool call; a worker runs it." in page

    def finished():
        status = call(url, "get_tool_call_status", {"tool_call_id": call_id}).structured_content
        return status if status["status"] == "succeeded" else None

    status = wait_until(finished, what="the worker to run the approved call")
    result = json.loads(status["result"])
    assert (result["user"], result["tenant"], result["value"]) == ("alice", "ops-tenant", 3)
    assert result["pid"] != os.getpid()  # the worker process ran it, not the web process
    assert Counter.objects.get(name="mcp").value == 3
    conversation = ToolCall.objects.get(pk=call_id).conversation
    wait_until(lambda: Conversation.objects.get(pk=conversation.pk).status == "idle", what="the conversation to end")
    # No model asked for the call, so none was asked about its result: the call and its answer, nothing more.
    assert list(conversation.messages.order_by("id").values_list("role", flat=True)) == ["assistant", "tool"]
