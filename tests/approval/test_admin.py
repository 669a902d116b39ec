"""Deciding in the admin: the change list actions, the reject reason page, editing arguments, permissions."""

import json

import pytest
from django.contrib.admin import AdminSite
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from tests import asgi_server
from tests.approvalapp.models import Counter
from toolcalling.models import Conversation, Message, ToolCall

CHANGELIST = "/admin/toolcalling/toolcall/"


@pytest.fixture
def waiting(api, ops, model):
    model.call("bump", {"name": "<b>orders</b>", "by": 2})
    response = api.post(f"/api/toolcalling/conversations/{ops['id']}/messages/", {"content": "bump"}, format="json")
    assert response.status_code == 201, response.content
    return ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])


@pytest.fixture
def admin_client_for(db):
    def login(user):
        client = asgi_server.client()
        client.force_login(user)
        return client

    return login


@pytest.fixture
def viewer(db):
    """Staff who may look at tool calls but not decide."""
    user = get_user_model().objects.create_user("dave", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_toolcall"))
    return user


def tool_message(call):
    return Message.objects.get(role="tool", tool_call_id=call.call_id)


def test_the_change_list_shows_waiting_calls_escaped_with_requester_and_age(admin_client_for, approver, waiting):
    response = admin_client_for(approver).get(CHANGELIST + "?status__exact=awaiting_approval")
    assert response.status_code == 200
    page = response.content.decode()
    assert "&lt;b&gt;orders&lt;/b&gt;" in page and "<b>orders</b>" not in page  # arguments are escaped
    assert "<dt>by</dt><dd>2</dd>" in page  # the arguments as labelled lines
    assert "alice" in page and f"/admin/toolcalling/conversation/{waiting.conversation_id}/change/" in page
    assert 'value="approve_selected"' in page and 'value="reject_selected"' in page
    assert "minute" in page  # the age column ("0 minutes")


def test_approve_selected_runs_the_call_logs_and_reports(admin_client_for, approver, waiting, model, transactional_db):
    model.reply("Bumped.")
    client = admin_client_for(approver)
    data = {"action": "approve_selected", "_selected_action": [waiting.pk]}
    response = client.post(CHANGELIST, data, follow=True)  # committed at once: eager Celery runs it in the request
    assert response.status_code == 200
    # Eager Celery ran it inside the request: the message says so, not "a worker runs it".
    assert f"Approved #{waiting.pk} bump; it ran: Succeeded." in response.content.decode()
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decided_by) == ("succeeded", approver)
    assert Counter.objects.get(name="<b>orders</b>").value == 2
    assert LogEntry.objects.get(object_id=str(waiting.pk), user=approver).change_message == "Approved."
    assert Conversation.objects.get(pk=waiting.conversation_id).status == "idle"
    # A decided call is no longer on the desk, so the action cannot pick it; from the full list it is skipped.
    assert [str(m) for m in client.post(CHANGELIST, data, follow=True).context["messages"]] == []
    again = client.post(CHANGELIST + "?status=all", data, follow=True)
    assert "already decided: it is succeeded" in again.content.decode()
    assert Counter.objects.get(name="<b>orders</b>").value == 2
    model.assert_done()


def test_reject_selected_asks_for_a_reason_then_rejects(
    admin_client_for, approver, waiting, model, django_capture_on_commit_callbacks
):
    client = admin_client_for(approver)
    data = {"action": "reject_selected", "_selected_action": [waiting.pk]}
    page = client.post(CHANGELIST, data)
    assert page.status_code == 200
    assert [t.name for t in page.templates][0] == "admin/toolcalling/toolcall/reject_selected_confirmation.html"
    html = page.content.decode()
    assert 'name="reason"' in html and 'name="post" value="yes"' in html and "&lt;b&gt;orders" in html
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"  # nothing happens before the reason is given
    model.reply("A staff member said no.")
    with django_capture_on_commit_callbacks(execute=True):
        done = client.post(CHANGELIST, {**data, "post": "yes", "reason": "Not today."}, follow=True)
    assert "Rejected 1 tool call; the model is told why." in done.content.decode()
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decision_reason, waiting.decided_by) == ("rejected", "Not today.", approver)
    assert tool_message(waiting).content.endswith("Reason: Not today.")
    assert LogEntry.objects.get(object_id=str(waiting.pk)).change_message == "Rejected: Not today."
    assert not Counter.objects.filter(name="<b>orders</b>").exists()
    model.assert_done()


def test_a_sites_own_admin_lists_the_actions_by_their_public_names(rf, approver, waiting):
    """``toolcalling.admin.approve_selected`` and ``reject_selected`` are the desk's own actions: a site's subclass
    of ``ToolCallAdmin`` lists them as before, and they run on it."""
    from toolcalling.admin import ToolCallAdmin, approve_selected, reject_selected

    class OwnToolCallAdmin(ToolCallAdmin):
        actions = [approve_selected, reject_selected]

    own = OwnToolCallAdmin(ToolCall, AdminSite(name="own"))
    assert own.check() == []
    request = rf.post(CHANGELIST, {"action": "reject_selected", "_selected_action": [waiting.pk]})
    request.user = approver
    actions = own.get_actions(request)
    assert {name: str(description) for name, (_, _, description) in actions.items()} == {
        "approve_selected": "Approve selected tool calls",
        "reject_selected": "Reject selected tool calls",
    }
    page = actions["reject_selected"][0](own, request, ToolCall.objects.filter(pk=waiting.pk))
    assert page.template_name == "admin/toolcalling/toolcall/reject_selected_confirmation.html"
    assert list(page.context_data["calls"]) == [waiting]
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"  # the reason is asked first


def test_staff_without_the_permission_cannot_decide(admin_client_for, viewer, waiting):
    client = admin_client_for(viewer)
    page = client.get(CHANGELIST).content.decode()
    assert "approve_selected" not in page and "reject_selected" not in page
    response = client.post(CHANGELIST, {"action": "approve_selected", "_selected_action": [waiting.pk]}, follow=True)
    assert response.status_code == 200
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"
    change = client.get(f"{CHANGELIST}{waiting.pk}/change/").content.decode()
    assert 'name="arguments"' not in change  # read-only for them


def test_an_approver_edits_arguments_validated_against_the_tool(
    admin_client_for, approver, waiting, model, django_capture_on_commit_callbacks
):
    client = admin_client_for(approver)
    url = f"{CHANGELIST}{waiting.pk}/change/"
    form = client.get(url).content.decode()
    assert 'name="arguments"' in form
    bad = client.post(url, {"arguments": json.dumps({"name": "orders", "by": "ten"})})
    assert bad.status_code == 200 and "by" in bad.context["adminform"].form.errors["arguments"][0]
    not_json = client.post(url, {"arguments": "{by: 3"})
    assert not_json.status_code == 200 and not_json.context["adminform"].form.errors["arguments"]
    saved = client.post(url, {"arguments": json.dumps({"name": "orders", "by": 5})})
    assert saved.status_code == 302
    waiting.refresh_from_db()
    assert waiting.arguments == {"name": "orders", "by": 5}
    assert waiting.original_arguments == {"name": "<b>orders</b>", "by": 2}
    assert waiting.status == "awaiting_approval"
    model.reply("Bumped by 5 as the staff member set.")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(CHANGELIST, {"action": "approve_selected", "_selected_action": [waiting.pk]})
    text = tool_message(waiting).content
    assert text.startswith("Note: a staff member changed the arguments before approving")
    assert Counter.objects.get(name="orders").value == 5
    decided = client.get(url)
    assert 'name="arguments"' not in decided.content.decode()  # a decided call is read-only
    model.assert_done()
