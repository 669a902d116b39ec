"""Who decides a gated call: the conversation's own user for ``approver="user"`` tools, approvers otherwise;
and what the API shows those who decide (``approver``, ``preview``)."""

from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from tests.approvalapp.models import Counter
from toolcalling import approval, tool
from toolcalling.exceptions import DecisionNotAllowed, ImproperlyDefined
from toolcalling.models import Conversation, Message, ToolCall

URL = "/api/toolcalling/"


def ask(client, conversation_id, model, tool_name, arguments):
    model.call(tool_name, arguments)
    response = client.post(f"{URL}conversations/{conversation_id}/messages/", {"content": "do it"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def tool_message(call):
    return Message.objects.get(conversation_id=call.conversation_id, role="tool", tool_call_id=call.call_id)


@pytest.fixture
def confirmable(api, ops, model):
    """alice's call that she confirms herself: move 3 points to "savings"."""
    body = ask(api, ops["id"], model, "move_points", {"name": "savings", "points": 3})
    [waiting] = body["awaiting_approval"]
    assert waiting["approver"] == "user"
    return ToolCall.objects.get(pk=waiting["id"])


def test_the_user_confirms_their_own_call_and_the_model_answers(
    api, ops, confirmable, model, django_capture_on_commit_callbacks
):
    model.reply("Moved 3 points to savings.")
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"{URL}tool-calls/{confirmable.pk}/approve/", {}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "approved" and "user" not in response.json()  # the user's own view
    confirmable.refresh_from_db()
    assert confirmable.decided_by.get_username() == "alice"
    assert tool_message(confirmable).content == "savings got 3 points for alice"
    assert Counter.objects.get(name="savings").value == 3
    assert LogEntry.objects.get(object_id=str(confirmable.pk)).change_message == "Confirmed by the user."
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    model.assert_done()


def test_the_user_confirming_with_edited_arguments_is_logged_so_and_told_to_the_model(
    api, ops, confirmable, model, django_capture_on_commit_callbacks
):
    model.reply("Moved 2 points to savings.")
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            f"{URL}tool-calls/{confirmable.pk}/approve/", {"arguments": {"name": "savings", "points": 2}}, format="json"
        )
    assert response.status_code == 200, response.content
    entry = LogEntry.objects.get(object_id=str(confirmable.pk))
    assert entry.change_message == "Confirmed by the user with edited arguments."
    assert tool_message(confirmable).content.startswith("Note: the user changed the arguments before approving;")
    assert Counter.objects.get(name="savings").value == 2
    model.assert_done()


def test_a_new_message_while_the_user_must_confirm_says_so(api, ops, confirmable):
    response = api.post(f"{URL}conversations/{ops['id']}/messages/", {"content": "hello?"}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "conversation_busy"
    assert response.json()["detail"] == "A tool call waits for you to confirm or decline it first."


def test_the_user_declines_and_the_model_is_told_the_user_declined(
    api, ops, confirmable, model, django_capture_on_commit_callbacks
):
    model.reply("All right, nothing was moved.")
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"{URL}tool-calls/{confirmable.pk}/reject/", {"reason": "changed my mind"}, format="json")
    assert response.status_code == 200, response.content
    assert tool_message(confirmable).content == "Not run: the user declined this call. Reason: changed my mind"
    assert model.messages(-1)[-1]["content"].startswith("Not run: the user declined this call.")
    assert LogEntry.objects.get(object_id=str(confirmable.pk)).change_message == "Declined by the user: changed my mind"
    assert not Counter.objects.filter(name="savings").exists()
    model.assert_done()


def test_nobody_else_decides_a_call_the_user_confirms_not_even_staff(api, confirmable, bob, approver_api):
    api.force_authenticate(bob)
    for verb in ("approve", "reject"):  # another user's call is not found, as a missing id is not
        response = api.post(f"{URL}tool-calls/{confirmable.pk}/{verb}/", {}, format="json")
        missing = api.post(f"{URL}tool-calls/{confirmable.pk + 1000}/{verb}/", {}, format="json")
        assert response.status_code == missing.status_code == 404
        assert response.json() == missing.json()
    for client in (approver_api,):
        for verb in ("approve", "reject"):
            response = client.post(f"{URL}tool-calls/{confirmable.pk}/{verb}/", {}, format="json")
            assert response.status_code == 403
            assert response.json() == {
                "detail": "Only the user of this conversation may confirm or decline this call.",
                "code": "permission_denied",
                "status": "awaiting_approval",
            }
    confirmable.refresh_from_db()
    assert confirmable.status == "awaiting_approval"


def test_the_user_may_not_decide_a_call_staff_decide(api, ops, model):
    body = ask(api, ops["id"], model, "bump", {"name": "orders"})
    call_id = body["awaiting_approval"][0]["id"]
    assert body["awaiting_approval"][0]["approver"] == "staff"
    response = api.post(f"{URL}tool-calls/{call_id}/approve/", {}, format="json")
    assert response.status_code == 403 and "toolcalling.approve_toolcall" in response.json()["detail"]


def test_previews_go_to_those_who_decide_computed_when_they_look(api, ops, approver_api, model):
    bump_id = ask(api, ops["id"], model, "bump", {"name": "orders", "by": 2})["awaiting_approval"][0]["id"]
    Counter.objects.create(name="orders", value=10)
    [item] = approver_api.get(f"{URL}tool-calls/?status=awaiting_approval").json()
    assert item["preview"] == {"value": {"counter": "orders", "now": 10, "after": 12, "for": "alice"}, "error": ""}
    Counter.objects.filter(name="orders").update(value=20)
    one = approver_api.get(f"{URL}tool-calls/{bump_id}/").json()
    assert one["preview"]["value"]["now"] == 20  # the current state, not the state when it was asked for
    # alice does not decide her staff call, so she gets no preview of it.
    assert api.get(f"{URL}tool-calls/{bump_id}/").json()["preview"] is None
    history = api.get(f"{URL}conversations/{ops['id']}/messages/").json()
    assert [c["preview"] for m in history for c in m["tool_calls"]] == [None]


def test_the_user_gets_the_preview_of_a_call_they_confirm_in_the_history(api, ops, confirmable):
    Counter.objects.create(name="savings", value=4)
    history = api.get(f"{URL}conversations/{ops['id']}/messages/").json()
    [call] = [c for m in history for c in m["tool_calls"]]
    assert call["preview"] == {"value": "savings has 4 points now; it gets 3 more.", "error": ""}
    assert api.get(f"{URL}tool-calls/{confirmable.pk}/").json()["preview"]["value"].startswith("savings has 4")


def test_a_preview_that_raises_is_reported_not_raised(api, ops, approver_api, model):
    call_id = ask(api, ops["id"], model, "bump", {"name": "locked"})["awaiting_approval"][0]["id"]
    response = approver_api.get(f"{URL}tool-calls/{call_id}/")
    assert response.status_code == 200
    assert response.json()["preview"] == {
        "value": None,
        "error": "PermissionError: the counter 'locked' cannot be read",
    }


def test_cancelling_a_call_the_user_confirms_says_the_user_cancelled_it(api, ops, confirmable):
    response = api.post(f"{URL}conversations/{ops['id']}/cancel/")
    assert response.status_code == 200
    assert tool_message(confirmable).content == "Not run: the user cancelled this call."


def test_expiry_of_a_call_the_user_confirms_says_the_user_did_not_confirm(
    confirmable, model, django_capture_on_commit_callbacks
):
    model.reply("You did not confirm in time, so nothing was moved.")
    with django_capture_on_commit_callbacks(execute=True):
        [expired] = approval.expire(now=timezone.now() + timedelta(days=2))
    assert expired.pk == confirmable.pk
    text = tool_message(confirmable).content
    assert text == "Not run: the user did not confirm within 24 hours, so the request expired."
    model.assert_done()


def test_tool_options_for_approval_are_checked_when_the_tool_is_defined():
    def f(x: int) -> int:
        """Do it."""
        return x

    with pytest.raises(ImproperlyDefined) as error:
        tool(approver="staf", approval_preview="text")(f)
    message = str(error.value)
    assert "approver must be one of 'staff', 'user', not 'staf'" in message
    assert "approval_preview must be a callable" in message
    assert "apply only to a tool with requires_approval" in message


def test_each_refusal_says_why_with_the_calls_status(api, ops, model, approver, approver_api):
    call_id = ask(api, ops["id"], model, "bump", {"name": "orders"})["awaiting_approval"][0]["id"]
    response = api.post(f"{URL}tool-calls/{call_id}/approve/", {}, format="json")  # alice has no permission
    assert (response.status_code, response.json()) == (403, {
        "detail": "You need the permission toolcalling.approve_toolcall to decide on tool calls.",
        "code": "permission_denied",
        "status": "awaiting_approval",
    })  # fmt: skip
    own = approver_api.post(f"{URL}conversations/", {"assistant": ops["assistant"]}, format="json").json()
    own_call = ask(approver_api, own["id"], model, "bump", {"name": "orders"})["awaiting_approval"][0]["id"]
    response = approver_api.post(f"{URL}tool-calls/{own_call}/approve/", {}, format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == (
        "You asked for this call in your own conversation, so another staff member has to approve it "
        "(you may still reject it)."
    )
    assert response.json()["status"] == "awaiting_approval"

    call = ToolCall.objects.get(pk=call_id)
    with pytest.raises(DecisionNotAllowed) as nobody:
        approval.approve(call, AnonymousUser())
    assert nobody.value.status == "awaiting_approval"
    assert not approval.may_decide(call, AnonymousUser()) and not approval.may_decide(call, None)
    assert approval.may_decide(call, approver) and not approval.may_decide(call, call.conversation.user)
    # The four-eyes rule is for approving: an approver may still reject a call of their own conversation.
    mine = ToolCall.objects.get(pk=own_call)
    assert approval.may_decide(mine, approver) and not approval.may_decide(mine, approver, approving=True)
