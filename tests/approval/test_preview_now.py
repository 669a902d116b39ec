"""A waiting call's preview, computed when someone who decides looks: run as the requester in the call's own
conversation, made JSON-able, and absent when the tool has none or is no longer offered; and the approvers' list
of waiting calls, longest-waiting first."""

import datetime
from collections.abc import Iterator

import pytest
from django.utils import timezone

from tests.approval.test_decisions import post
from toolcalling import Assistant, ToolContext, approval, tool
from toolcalling.models import ToolCall
from toolcalling.toolkit import assistants, tools


def waiting(client, conversation, model, *calls):
    model.calls(*calls)
    response = post(client, conversation, "please")
    assert response.status_code == 201, response.content
    return [ToolCall.objects.get(pk=c["id"]) for c in response.json()["awaiting_approval"]]


def ship_preview(ctx: ToolContext, args: dict) -> dict:
    return {
        "on": datetime.date(2026, 3, int(args["day"])),
        "for": ctx.user.get_username(),
        "conversation": str(ctx.conversation.pk),
        "call": ctx.tool_call.pk,
    }


@pytest.fixture
def depot(api) -> Iterator[dict]:
    @tool(requires_approval=True, approval_preview=ship_preview)
    def ship_crate(ctx: ToolContext, day: int) -> str:
        """Ship a crate on a day of March."""
        return "shipped"

    class DepotAssistant(Assistant):
        id = "depot-preview-test"
        tools = ["ship_crate", "refund"]

    try:
        yield api.post("/api/toolcalling/conversations/", {"assistant": DepotAssistant.id}, format="json").json()
    finally:
        assistants.unregister(DepotAssistant.id)
        tools.unregister("ship_crate")


def test_a_preview_runs_as_the_requester_in_the_calls_conversation_and_is_json(api, depot, model):
    [call] = waiting(api, depot, model, ("ship_crate", {"day": 3}))
    shown = approval.preview(call)
    assert shown.value == {"on": "2026-03-03", "for": "alice", "conversation": depot["id"], "call": call.pk}
    assert shown.error == ""


def test_no_preview_for_a_tool_without_one_or_one_the_assistant_no_longer_offers(api, depot, model):
    big_refund, crate = waiting(
        api, depot, model, ("refund", {"order_no": "A1", "amount": 500}), ("ship_crate", {"day": 4})
    )
    assert approval.preview(big_refund) is None  # refund has no approval_preview
    assistants.get("depot-preview-test").tools = ["refund"]
    assert approval.preview(crate) is None


def test_approvers_see_staff_calls_longest_waiting_first_with_their_requester(
    api, ops, model, django_assert_num_queries
):
    older, newer = waiting(api, ops, model, ("bump", {"name": "a"}), ("bump", {"name": "b"}))
    ToolCall.objects.filter(pk=newer.pk).update(created_at=timezone.now() - datetime.timedelta(hours=1))
    with django_assert_num_queries(1):
        listed = [(c.pk, c.conversation.user.get_username()) for c in approval.waiting_calls()]
    assert listed == [(newer.pk, "alice"), (older.pk, "alice")]


def test_calls_the_user_confirms_are_not_on_the_approvers_list(api, ops, model):
    [own] = waiting(api, ops, model, ("move_points", {"name": "c", "points": 1}))
    assert own.approver == "user"
    assert list(approval.waiting_calls()) == []


def test_calls_asked_for_at_the_same_moment_are_listed_in_the_order_they_were_made(api, ops, model):
    first, second = waiting(api, ops, model, ("bump", {"name": "a"}), ("bump", {"name": "b"}))
    ToolCall.objects.filter(pk__in=[first.pk, second.pk]).update(created_at=first.created_at)
    assert [c.pk for c in approval.waiting_calls()] == [first.pk, second.pk]
    assert [c.pk for c in approval.waiting_calls().reverse()] == [second.pk, first.pk]
