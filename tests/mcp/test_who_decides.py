"""A gated call made over MCP says who decides it: a staff member, or, for ``approver="user"`` tools, the user
themselves (the client's own user, on the site), so the client's model never tells its user to wait for staff."""

import json

import pytest

from toolcalling.models import ToolCall

pytestmark = pytest.mark.django_db


def call(api, assistant, name, arguments):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    answer = api.generic(
        "POST", f"/api/toolcalling/mcp/{assistant}/", json.dumps(body), content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    return answer.json()["result"]


def test_a_call_the_user_confirms_says_the_user_decides_not_staff(api):
    result = call(api, "ops", "move_points", {"name": "alice", "points": 5})
    [stored] = ToolCall.objects.filter(name="move_points")
    assert (stored.status, stored.approver) == ("awaiting_approval", "user")
    assert result.get("isError", False) is False
    text = result["content"][0]["text"]
    assert "staff" not in text
    assert text.startswith("This call waits for you to confirm it on the site and has not run yet.")
    assert f'call get_tool_call_status with {{"tool_call_id": {stored.pk}}}' in text
    assert result["structuredContent"] == {
        "tool_call_id": stored.pk,
        "tool": "move_points",
        "status": "awaiting_approval",
    }


def test_a_call_staff_decides_still_says_so(api):
    result = call(api, "helper", "delete_everything", {"confirm": "yes"})
    [stored] = ToolCall.objects.filter(name="delete_everything")
    assert stored.approver == "staff"
    assert result["content"][0]["text"].startswith("This call waits for a staff member's approval and has not run yet.")
