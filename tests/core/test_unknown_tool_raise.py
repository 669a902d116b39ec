"""``TOOL_ERRORS = "raise"`` covers every failed call, a call to a tool the assistant does not have included: the
turn ends with ``tool_error`` (422), and the history stays one the real API accepts."""

import pytest

from tests.history import history_problems
from toolcalling.models import Conversation, ToolCall


@pytest.mark.toolcalling(TOOL_ERRORS="raise")
def test_an_unknown_tool_under_raise_ends_the_turn_with_tool_error(api, conversation, model):
    model.calls(("nonexistent", {}), ("add", {"a": 1, "b": 2}))
    response = api.post(
        f"/api/toolcalling/conversations/{conversation['id']}/messages/", {"content": "use it"}, format="json"
    )
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["code"] == "tool_error"
    assert body["detail"].startswith("there is no tool named 'nonexistent'. Available tools: ")
    conv = Conversation.objects.get(pk=conversation["id"])
    assert conv.status == "failed" and "nonexistent" in conv.error
    calls = ToolCall.objects.filter(conversation_id=conversation["id"]).order_by("index")
    assert [(c.name, c.status) for c in calls] == [("nonexistent", "failed"), ("add", "cancelled")]  # add never ran
    assert len(model.requests) == 1  # the model is not asked again
    assert history_problems(conv.pk) == []
    model.assert_done()
