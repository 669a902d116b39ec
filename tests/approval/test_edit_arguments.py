"""Editing a waiting call's arguments (the admin's change form; approving with ``arguments``): only one who may
approve it, only while it waits, only that call, stored as JSON, and the model's own arguments kept once."""

import datetime
from collections.abc import Iterator

import pytest

from tests.approval.test_decisions import post
from toolcalling import Assistant, ToolContext, approval, tool
from toolcalling.exceptions import AlreadyDecided, InvalidArguments, RequesterMayNotApprove
from toolcalling.models import ToolCall
from toolcalling.toolkit import assistants, tools


def waiting_calls(client, conversation, model, *calls):
    model.calls(*calls)
    response = post(client, conversation, "please")
    assert response.status_code == 201, response.content
    return [ToolCall.objects.get(pk=c["id"]) for c in response.json()["awaiting_approval"]]


def test_editing_counts_as_approving_so_the_requester_may_not_edit_their_own_call(approver, approver_api, model):
    own = approver_api.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json").json()
    [call] = waiting_calls(approver_api, own, model, ("bump", {"name": "mine", "by": 1}))
    with pytest.raises(RequesterMayNotApprove):
        approval.edit_arguments(call, approver, {"name": "mine", "by": 100})
    assert ToolCall.objects.get(pk=call.pk).arguments == {"name": "mine", "by": 1}


def test_edits_change_only_that_call_and_keep_the_models_own_arguments_once(api, ops, model, approver):
    first, second = waiting_calls(api, ops, model, ("bump", {"name": "a", "by": 1}), ("bump", {"name": "b", "by": 2}))
    approval.edit_arguments(first, approver, {"name": "a", "by": 10})
    approval.edit_arguments(ToolCall.objects.get(pk=first.pk), approver, {"name": "a", "by": 20})
    first, second = ToolCall.objects.get(pk=first.pk), ToolCall.objects.get(pk=second.pk)
    assert (first.arguments, first.original_arguments) == ({"name": "a", "by": 20}, {"name": "a", "by": 1})
    assert (second.arguments, second.original_arguments) == ({"name": "b", "by": 2}, None)


def test_a_call_decided_meanwhile_is_not_edited(api, ops, model, approver):
    [call] = waiting_calls(api, ops, model, ("bump", {"name": "a", "by": 1}))
    model.reply("Rejected.")
    approval.reject(ToolCall.objects.get(pk=call.pk), approver, "no")  # `call` is what the editor still sees
    with pytest.raises(AlreadyDecided) as info:
        approval.edit_arguments(call, approver, {"name": "a", "by": 5})
    assert info.value.status == "rejected"
    assert ToolCall.objects.get(pk=call.pk).arguments == {"name": "a", "by": 1}


@pytest.fixture
def planner(api) -> Iterator[dict]:
    """A conversation with an assistant whose gated tool takes a date."""

    @tool(requires_approval=True)
    def schedule(ctx: ToolContext, day: datetime.date, note: str = "") -> str:
        """Plan something for a day."""
        return f"planned {day.isoformat()}"

    class PlannerAssistant(Assistant):
        id = "planner-edit-test"
        tools = ["schedule"]

        def get_tools(self, ctx: ToolContext) -> list:
            return super().get_tools(ctx) if ctx.conversation is not None else []  # offered in conversations only

    try:
        response = api.post("/api/toolcalling/conversations/", {"assistant": PlannerAssistant.id}, format="json")
        yield response.json()
    finally:
        assistants.unregister(PlannerAssistant.id)
        if tools.is_registered("schedule"):
            tools.unregister("schedule")


def test_edited_arguments_are_stored_as_json_and_a_tool_gone_meanwhile_says_so(api, planner, model, approver):
    [call] = waiting_calls(api, planner, model, ("schedule", {"day": "2026-03-01"}))
    approval.edit_arguments(call, approver, '{"day": "2026-03-02", "note": "moved"}')
    assert ToolCall.objects.get(pk=call.pk).arguments == {"day": "2026-03-02", "note": "moved"}
    assistants.get("planner-edit-test").tools = []  # the site took the tool off the assistant
    with pytest.raises(InvalidArguments) as info:
        approval.edit_arguments(call, approver, {"day": "2026-03-03"})
    assert str(info.value) == "The assistant 'planner-edit-test' has no tool named 'schedule'."
    assistants.get("planner-edit-test").tools = ["schedule"]
    tools.unregister("schedule")
    with pytest.raises(InvalidArguments) as info:
        approval.edit_arguments(call, approver, {"day": "2026-03-03"})
    assert str(info.value).startswith("No tool named 'schedule' is registered")


def test_arguments_are_checked_against_the_tools_the_requester_may_use(api, ops, model, approver, alice):
    from django.contrib.auth.models import Permission

    alice.user_permissions.add(Permission.objects.get(codename="change_counter", content_type__app_label="approvalapp"))
    [call] = waiting_calls(api, ops, model, ("reset", {"name": "stock"}))
    approval.edit_arguments(call, approver, {"name": "shelf"})  # reset needs a permission alice has
    assert ToolCall.objects.get(pk=call.pk).arguments == {"name": "shelf"}


@pytest.mark.parametrize("by", ["5", True, 5.5, None])
def test_edited_arguments_are_taken_as_the_schema_says_never_coerced(api, ops, model, approver, approver_api, by):
    [call] = waiting_calls(api, ops, model, ("bump", {"name": "a", "by": 1}))
    with pytest.raises(InvalidArguments) as info:
        approval.edit_arguments(call, approver, {"name": "a", "by": by})
    assert "by" in str(info.value)
    answer = approver_api.post(
        f"/api/toolcalling/tool-calls/{call.pk}/approve/", {"arguments": {"name": "a", "by": by}}, format="json"
    )
    assert answer.status_code == 400 and "by" in answer.json()["arguments"][0]
    call.refresh_from_db()
    assert (call.arguments, call.status) == ({"name": "a", "by": 1}, "awaiting_approval")


def test_the_admin_change_form_refuses_arguments_nested_100000_deep(api, ops, model, approver, client):
    [call] = waiting_calls(api, ops, model, ("bump", {"name": "a", "by": 1}))
    client.force_login(approver)
    url = f"/admin/toolcalling/toolcall/{call.pk}/change/"
    for levels in (100_000, 40):  # past what the JSON parser takes; parsed, but deeper than any schema allows
        deep = '{"name": "a", "by": ' + "[" * levels + "1" + "]" * levels + "}"
        refused = client.post(url, {"arguments": deep, "_approve": "1"})
        assert refused.status_code == 200 and refused.context["adminform"].form.errors["arguments"]
    call.refresh_from_db()
    assert (call.arguments, call.status) == ({"name": "a", "by": 1}, "awaiting_approval")


def test_the_model_is_told_edited_arguments_as_written_not_escaped():
    from toolcalling.approval._arguments import edit_note

    edited = ToolCall(
        name="bump", arguments={"name": "Jürgen", "by": 2}, original_arguments={"name": "Jurgen", "by": 2}
    )
    assert edit_note(edited) == (
        'Note: a staff member changed the arguments before approving; the tool ran with {"by": 2, "name": "Jürgen"}.\n'
    )
    edited.approver = ToolCall.Approver.USER
    assert edit_note(edited).startswith("Note: the user changed the arguments before approving;")
    edited.original_arguments = {"name": "Jürgen", "by": 2}  # the same as what it ran with: nothing to say
    assert edit_note(edited) == ""
