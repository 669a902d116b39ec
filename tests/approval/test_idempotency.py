"""``ctx.idempotency_key`` is the call's own, the same on every attempt to run it; ``@tool(idempotent=True)`` says
a tool may run again. Tasks run eagerly here."""

import uuid

import pytest

from tests.approval.test_decisions import post
from tests.approvalapp.models import Counter
from toolcalling import ToolContext, approval, tool
from toolcalling.exceptions import ImproperlyDefined
from toolcalling.models import ToolCall
from toolcalling.toolkit import tools as tool_registry


@pytest.fixture
def till(api):
    response = api.post("/api/toolcalling/conversations/", {"assistant": "till"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def delivered_keys(kind):
    return {row.name.removeprefix(f"{kind}-"): row.value for row in Counter.objects.filter(name__startswith=kind)}


def test_a_tool_is_told_a_key_made_from_its_call_not_a_random_one(api, till, model):
    model.call("charge", {"amount": 5})
    model.call("charge", {"amount": 5})
    model.reply("Charged twice, as asked.")
    assert post(api, till, "charge me 5, twice").status_code == 201
    first, second = ToolCall.objects.filter(conversation_id=till["id"]).order_by("message_id")
    keys = delivered_keys("charge")
    assert len(keys) == 2  # two calls, two keys, each delivered once
    assert set(keys.values()) == {1}
    for call in (first, second):
        context = ToolContext(user=None, tool_call=ToolCall.objects.get(pk=call.pk))  # read again: the same key
        assert context.idempotency_key in keys
        assert str(uuid.UUID(context.idempotency_key)) == context.idempotency_key
    assert ToolContext(user=None).idempotency_key is None  # outside a call there is none


def test_an_approved_call_runs_with_the_key_its_approver_saw(
    api, till, model, approver, django_capture_on_commit_callbacks
):
    model.call("approved_charge", {"amount": 7})
    response = post(api, till, "charge me 7")
    call = ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])
    seen = ToolContext(user=None, tool_call=call).idempotency_key  # as the waiting call is read on the desk
    model.reply("Charged.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.approve(call, approver)
    assert delivered_keys("charge") == {seen: 1}


def test_idempotent_is_an_option_of_the_decorator():
    assert tool_registry.get("send_receipt").idempotent is True
    assert tool_registry.get("charge").idempotent is False
    with pytest.raises(ImproperlyDefined, match="idempotent and atomic must be True or False"):

        @tool(idempotent="yes")  # type: ignore[arg-type]
        def maybe(ctx: ToolContext) -> str:
            """Nothing."""
            return ""
