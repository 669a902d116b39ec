"""The approval desk in the admin: the list opens on waiting calls, the index counts them, and a waiting call's
page shows who asked, the conversation, the preview, and decides with Approve and Reject."""

import json
import re

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from tests import asgi_server
from tests.approvalapp.models import Counter
from tests.services import wait_until
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.testutils import override_toolcalling

CHANGELIST = "/admin/toolcalling/toolcall/"


def ask(client, conversation_id, model, tool, arguments, text="please"):
    model.call(tool, arguments)
    response = client.post(
        f"/api/toolcalling/conversations/{conversation_id}/messages/", {"content": text}, format="json"
    )
    assert response.status_code == 201, response.content
    return ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])


def logged_in(user):
    client = asgi_server.client()
    client.force_login(user)
    return client


def change_url(call):
    return f"{CHANGELIST}{call.pk}/change/"


def messages_of(response):
    return [str(m) for m in response.context["messages"]]


@pytest.fixture
def waiting(api, ops, model):
    """alice asks for a gated bump of counter "orders" by 2, in her own words."""
    return ask(api, ops["id"], model, "bump", {"name": "orders", "by": 2}, "Please add two to the orders counter")


# The list -------------------------------------------------------------------------------------------------


def test_the_list_opens_on_calls_waiting_for_staff_longest_waiting_first(api, ops, approver, model, waiting):
    # Other conversations: a call the user confirms, a later waiting one, and one that ran at once.
    other = api.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json").json()
    ask(api, other["id"], model, "move_points", {"name": "me", "points": 1})
    ToolCall.objects.filter(pk=waiting.pk).update(created_at=waiting.created_at.replace(year=2020))
    third = api.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json").json()
    newer = ask(api, third["id"], model, "bump", {"name": "newer"})
    model.call("add", {"a": 1, "b": 2})
    model.reply("3")
    done = api.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json").json()
    api.post(f"/api/toolcalling/conversations/{done['id']}/messages/", {"content": "add"}, format="json")

    page = logged_in(approver).get(CHANGELIST)
    assert page.status_code == 200
    listed = [row.pk for row in page.context["cl"].result_list]
    assert listed == [waiting.pk, newer.pk]  # only staff calls that wait, longest-waiting first
    html = page.content.decode()
    assert "Tool calls awaiting a staff decision" in html
    assert "years" in html  # the age column of the oldest call
    everything = logged_in(approver).get(CHANGELIST + "?status=all")
    assert set(row.pk for row in everything.context["cl"].result_list) == set(
        ToolCall.objects.values_list("pk", flat=True)
    )
    assert [row.pk for row in everything.context["cl"].result_list][0] != waiting.pk  # latest first there


def test_the_index_and_app_list_show_how_many_calls_wait_to_approvers_only(admin_client_for, approver, waiting):
    index = admin_client_for(approver).get("/admin/").content.decode()
    assert "Tool calls (1 waiting)" in index
    assert "Tool calls (1 waiting)" in admin_client_for(approver).get("/admin/toolcalling/").content.decode()
    # On every admin page, in the sidebar.
    assert "Tool calls (1 waiting)" in admin_client_for(approver).get(CHANGELIST + "?status=all").content.decode()
    viewer = get_user_model().objects.create_user("dave", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_toolcall"))
    seen = admin_client_for(viewer).get("/admin/").content.decode()
    assert "Tool calls" in seen and "waiting)" not in seen
    ToolCall.objects.filter(pk=waiting.pk).update(status="rejected")
    assert "waiting)" not in admin_client_for(approver).get("/admin/").content.decode()


@pytest.fixture
def admin_client_for(db):
    return logged_in


# The change page of a waiting call --------------------------------------------------------------------------


def test_a_waiting_calls_page_shows_who_asked_why_the_tool_and_the_preview(approver, waiting):
    alice = waiting.conversation.user
    alice.first_name, alice.last_name, alice.email = "Alice", "Liddell", "alice@example.com"
    alice.save()
    Counter.objects.create(name="orders", value=40)
    page = logged_in(approver).get(change_url(waiting))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Waiting for a staff decision, for" in html
    assert "Alice Liddell (alice) &lt;alice@example.com&gt;" in html
    assert "<dd>Ops</dd>" in html  # the assistant's name
    assert "Please add two to the orders counter" in html  # what the user said
    assert "Add to a named counter (a staff member approves it first)." in html  # the tool's description
    # The preview, computed now: the counter's current value.
    assert re.search(r"<th scope=\"row\">now</th><td>40</td>", html)
    assert re.search(r"<th scope=\"row\">after</th><td>42</td>", html)
    assert 'name="arguments"' in html and "&quot;by&quot;: 2" in html
    assert 'name="_approve"' in html and 'name="_reject"' in html and 'name="reject_reason"' in html
    # Internal fields are folded away; nothing can be deleted.
    assert re.search(r"<details[^>]*>\s*<summary>.*Internal", html, re.S)
    assert "deletelink" not in html
    Counter.objects.filter(name="orders").update(value=7)  # the preview follows the current state
    assert re.search(
        r"<th scope=\"row\">now</th><td>7</td>", logged_in(approver).get(change_url(waiting)).content.decode()
    )


def test_a_preview_that_raises_shows_its_error_and_the_page_still_works(api, ops, approver, model):
    call = ask(api, ops["id"], model, "bump", {"name": "locked"})
    page = logged_in(approver).get(change_url(call))
    assert page.status_code == 200
    html = page.content.decode()
    assert "The preview failed: PermissionError: the counter &#x27;locked&#x27; cannot be read" in html
    assert 'name="_approve"' in html


def test_approve_on_the_page_runs_the_call_with_the_edited_arguments(approver, waiting, model, transactional_db):
    client = logged_in(approver)
    model.reply("Bumped by 5.")
    # Committed at once, so eager Celery runs the call inside the request, and the message says it ran.
    response = client.post(change_url(waiting), {"arguments": json.dumps({"name": "orders", "by": 5}), "_approve": "1"})
    assert response.status_code == 302 and response.url == CHANGELIST  # back to the desk
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decided_by, waiting.arguments) == (
        "succeeded",
        approver,
        {"name": "orders", "by": 5},
    )
    assert waiting.original_arguments == {"name": "orders", "by": 2}
    assert Counter.objects.get(name="orders").value == 5
    assert messages_of(client.get(CHANGELIST)) == [f"Approved #{waiting.pk} bump; it ran: Succeeded."]
    assert LogEntry.objects.get(object_id=str(waiting.pk)).change_message == "Approved with edited arguments."
    decided = client.get(change_url(waiting)).content.decode()
    assert 'name="arguments"' not in decided and 'name="_approve"' not in decided  # read-only now
    assert "Status: Succeeded" in decided and "Original arguments (from the model)" in decided
    model.assert_done()


def test_invalid_edited_arguments_are_shown_with_their_error_and_nothing_is_decided(approver, waiting):
    response = logged_in(approver).post(change_url(waiting), {"arguments": json.dumps({"by": "ten"}), "_approve": "1"})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["arguments"]
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval" and waiting.original_arguments is None


def test_reject_on_the_page_with_a_reason(approver, waiting, model, django_capture_on_commit_callbacks):
    client = logged_in(approver)
    model.reply("The staff said no: not today.")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(change_url(waiting), {"reject_reason": "Not today.", "_reject": "1"})
    assert response.status_code == 302
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decision_reason) == ("rejected", "Not today.")
    answer = Message.objects.get(role="tool", tool_call_id=waiting.call_id).content
    assert answer == "Not run: a staff member rejected this call. Reason: Not today."
    assert messages_of(client.get(CHANGELIST)) == [f"Rejected #{waiting.pk} bump; the model is told why."]
    assert not Counter.objects.filter(name="orders").exists()
    again = client.post(change_url(waiting), {"reject_reason": "twice", "_reject": "1"}, follow=True)
    assert "This tool call was already decided: it is rejected." in messages_of(again)


def test_approve_on_the_page_says_a_worker_runs_it_when_it_was_queued(api, ops, approver, worker_model):
    call = ask(api, ops["id"], worker_model, "bump", {"name": "queued"})
    worker_model.reply("Bumped on the worker.")
    client = logged_in(approver)
    response = client.post(change_url(call), {"_approve": "1"}, follow=True)
    assert messages_of(response) == ["Approved 1 tool call; a worker runs it."]
    wait_until(lambda: Conversation.objects.get(pk=ops["id"]).status == "idle", what="the worker to continue")
    assert Counter.objects.get(name="queued").value == 1
    worker_model.assert_done()


# Who may decide -------------------------------------------------------------------------------------------


def test_four_eyes_a_staff_member_cannot_approve_a_call_from_their_own_conversation(
    approver, model, django_capture_on_commit_callbacks
):
    own = asgi_server.api_client()
    own.force_authenticate(approver)
    conversation = own.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json").json()
    call = ask(own, conversation["id"], model, "bump", {"name": "mine"})
    client = logged_in(approver)
    html = client.get(change_url(call)).content.decode()
    assert "another staff member has to approve it" in html
    assert 'name="_approve"' not in html and 'name="arguments"' not in html and 'name="_reject"' in html
    refused = client.post(change_url(call), {"_approve": "1"}, follow=True)
    assert any("another staff member has to approve it" in m for m in messages_of(refused))
    action = client.post(
        CHANGELIST + "?status=all", {"action": "approve_selected", "_selected_action": [call.pk]}, follow=True
    )
    assert any("Skipped" in m and "another staff member" in m for m in messages_of(action))
    api = own.post(f"/api/toolcalling/tool-calls/{call.pk}/approve/", {}, format="json")
    assert api.status_code == 403
    assert api.json()["code"] == "requester_may_not_approve"
    assert "another staff member has to approve it" in api.json()["detail"]
    call.refresh_from_db()
    assert call.status == "awaiting_approval" and not Counter.objects.filter(name="mine").exists()
    with override_toolcalling(APPROVER_MAY_BE_REQUESTER=True), django_capture_on_commit_callbacks(execute=True):
        model.reply("Bumped your own counter.")
        assert own.post(f"/api/toolcalling/tool-calls/{call.pk}/approve/", {}, format="json").status_code == 200
    assert Counter.objects.get(name="mine").value == 1


def test_a_call_the_user_confirms_is_read_only_for_staff(api, ops, approver, model):
    call = ask(api, ops["id"], model, "move_points", {"name": "points", "points": 3})
    client = logged_in(approver)
    html = client.get(change_url(call)).content.decode()
    assert "Waiting for alice to confirm" in html and "Only alice can confirm or decline this call" in html
    assert 'name="_approve"' not in html and 'name="_reject"' not in html and 'name="arguments"' not in html
    client.post(change_url(call), {"_approve": "1"})
    action = client.post(
        CHANGELIST + "?status=all", {"action": "approve_selected", "_selected_action": [call.pk]}, follow=True
    )
    assert any("Only the user of this conversation may confirm or decline this call." in m for m in messages_of(action))
    call.refresh_from_db()
    assert call.status == "awaiting_approval"


def test_calls_and_conversations_are_an_audit_trail_nobody_adds_or_deletes_here(approver, waiting):
    superuser = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client = logged_in(superuser)
    assert client.get(CHANGELIST + "add/").status_code == 403
    assert client.get(f"{CHANGELIST}{waiting.pk}/delete/").status_code == 403
    conversations = "/admin/toolcalling/conversation/"
    assert client.get(conversations + "add/").status_code == 403
    assert client.get(f"{conversations}{waiting.conversation_id}/delete/").status_code == 403
    page = client.get(f"{conversations}{waiting.conversation_id}/change/")
    assert list(page.context["adminform"].form.fields) == ["title"]  # user, status, usage are read-only
    assert 'value="delete_selected"' not in client.get(conversations).content.decode()
