"""Deciding a call has one validation whatever the path (``approval.validate_decision``), a form-encoded JSON
field nested too deep is a 400, and a message the API refuses keeps none of the files it carried."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.attachments import files
from toolcalling import approval
from toolcalling.models import Attachment, Conversation, Message, ToolCall

pytestmark = pytest.mark.database  # reasons a database cannot store; a usage limit's refusal

URL = "/api/toolcalling"
DEEP_OBJECT = '{"a": ' * 100_000 + "1" + "}" * 100_000


@pytest.fixture
def waiting(api, model, alice) -> ToolCall:
    """A call of alice's own conversation that she confirms or declines herself (``approver="user"``)."""
    ops = Conversation.objects.create(user=alice, assistant_id="ops")
    model.call("move_points", {"name": "alice", "points": 5})
    response = api.post(f"{URL}/conversations/{ops.pk}/messages/", {"content": "Five points, please"}, format="json")
    assert response.status_code == 201, response.content
    call = ToolCall.objects.get(conversation=ops)
    assert (call.status, call.approver) == ("awaiting_approval", "user")
    return call


def post_raw(api, url, body):
    """``body`` as JSON with ASCII escapes, so a lone surrogate travels as ``\\ud800``."""
    return api.post(url, data=json.dumps(body), content_type="application/json")


# Defect 3 --------------------------------------------------------------------------------------------------------


def test_form_encoded_arguments_nested_too_deep_are_a_400(api, model, waiting):
    response = api.post(f"{URL}/tool-calls/{waiting.pk}/approve/", {"arguments": DEEP_OBJECT}, format="multipart")

    assert response.status_code == 400, response.content[:300]
    assert response.json() == {"arguments": ["The JSON is nested too deeply."]}
    waiting.refresh_from_db()
    assert (waiting.status, waiting.arguments) == ("awaiting_approval", {"name": "alice", "points": 5})


def test_any_signed_in_user_meets_the_400_before_the_call_is_looked_up(api):
    response = api.post(f"{URL}/tool-calls/999999/approve/", {"arguments": DEEP_OBJECT}, format="multipart")

    assert response.status_code == 400
    assert response.json() == {"arguments": ["The JSON is nested too deeply."]}


# Defect 4: the one validation of a decision ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "refusal"),
    [
        ("no \ud800", "Surrogate characters are not allowed: U+D800."),
        ("no\x00", "Null characters are not allowed."),
        ("x" * 2001, "The reason is too long: it may have at most 2000 characters."),
    ],
    ids=["a-lone-surrogate", "a-nul", "2001-characters"],
)
def test_reject_refuses_a_reason_it_cannot_store_on_every_path(api, model, waiting, alice, reason, refusal):
    with pytest.raises(ValidationError) as refused:
        approval.reject(waiting, alice, reason)
    assert refused.value.message_dict == {"reason": [refusal]}
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decision_reason) == ("awaiting_approval", "")
    assert not Message.objects.filter(role="tool").exists()

    response = post_raw(api, f"{URL}/tool-calls/{waiting.pk}/reject/", {"reason": reason})
    assert (response.status_code, response.json()) == (400, {"reason": [refusal]})


def test_a_reason_of_2000_characters_after_stripping_is_taken(api, model, waiting, alice):
    reason = "y" * 2000
    assert approval.validate_decision(waiting, reason=f"  {reason}\n") == (reason, None)
    response = api.post(f"{URL}/tool-calls/{waiting.pk}/reject/", {"reason": f" {reason} "}, format="json")
    assert response.status_code == 200, response.content[:300]
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decision_reason) == ("rejected", reason)


def test_one_check_names_every_field_of_a_decision_that_is_wrong(model, waiting):
    with pytest.raises(ValidationError) as refused:
        approval.validate_decision(waiting, reason="x" * 2001, arguments={"name": "alice", "points": "5"})
    assert refused.value.message_dict.keys() == {"reason", "arguments"}
    (message,) = refused.value.message_dict["arguments"]
    assert message.startswith("points: ")
    # Arguments the tool takes come back validated; a lone surrogate in them is made storable, not refused.
    assert approval.validate_decision(waiting, arguments={"name": "al\ud800", "points": 7}) == (
        "",
        {"name": "al\ufffd", "points": 7},
    )
    waiting.refresh_from_db()
    assert (waiting.status, waiting.arguments) == ("awaiting_approval", {"name": "alice", "points": 5})


# Defect 10 -------------------------------------------------------------------------------------------------------


def png():
    return SimpleUploadedFile("a.png", files.PNG, "image/png")


def test_a_message_refused_as_busy_keeps_none_of_its_files(api, model, conversation):
    Conversation.objects.filter(pk=conversation["id"]).update(status="running")
    response = api.post(
        f"{URL}/conversations/{conversation['id']}/messages/", {"content": "Look", "files": [png()]}, format="multipart"
    )

    assert response.status_code == 409 and response.json()["code"] == "conversation_busy"
    assert not Attachment.objects.exists()


@pytest.mark.toolcalling(USAGE_LIMITS=[{"turns": 1, "per": "user", "period": "day"}])
def test_a_message_refused_by_a_usage_limit_keeps_none_of_its_files(api, model, conversation):
    url = f"{URL}/conversations/{conversation['id']}/messages/"
    model.reply("The one answer of today.")
    assert api.post(url, {"content": "first"}, format="json").status_code == 201
    uploaded = api.post(f"{URL}/attachments/", {"file": png()}, format="multipart").json()

    response = api.post(url, {"content": "Look", "files": [png()], "attachments": [uploaded["id"]]}, format="multipart")

    assert response.status_code == 429 and response.json()["code"] == "usage_limit_exceeded"
    # The upload it named by id stays the user's to send later; the file it brought is gone.
    assert [str(a.pk) for a in Attachment.objects.all()] == [uploaded["id"]]
    assert Attachment.objects.get().message is None
    model.assert_done()


# The admin's rejections go through the same check ----------------------------------------------------------------


@pytest.fixture
def staff_call(api, model, alice) -> ToolCall:
    ops = Conversation.objects.create(user=alice, assistant_id="ops")
    model.call("bump", {"name": "orders", "by": 2})
    assert api.post(f"{URL}/conversations/{ops.pk}/messages/", {"content": "Bump it"}, format="json").status_code == 201
    return ToolCall.objects.get(conversation=ops, status="awaiting_approval", approver="staff")


@pytest.fixture
def carol(db):
    user = get_user_model().objects.create_user("carol", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["approve_toolcall", "view_toolcall"]))
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    ("reason", "refusal"),
    [("no\x00", "Null characters are not allowed."),
     ("x" * 2001, "The reason is too long: it may have at most 2000 characters.")],
    ids=["a-nul", "2001-characters"],
)  # fmt: skip
def test_the_admins_reject_action_and_desk_refuse_the_same_reasons(carol, staff_call, reason, refusal):
    action = {"action": "reject_selected", "_selected_action": [staff_call.pk], "post": "yes", "reason": reason}
    listed = carol.post("/admin/toolcalling/toolcall/", action, follow=True)
    desk = carol.post(f"/admin/toolcalling/toolcall/{staff_call.pk}/change/",
                      {"_reject": "1", "reject_reason": reason}, follow=True)  # fmt: skip

    for response in (listed, desk):
        assert response.status_code == 200
        assert [str(m) for m in response.context["messages"]] == [refusal]
    staff_call.refresh_from_db()
    assert (staff_call.status, staff_call.decision_reason) == ("awaiting_approval", "")
