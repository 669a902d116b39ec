"""The desk's list at a glance: each waiting call shows its arguments and preview as labelled lines, and its row
has Approve and Reject, which decide through the list's own actions: the same permission, four-eyes rule and
LogEntry, and Reject asks for the reason first."""

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from tests.approval.test_desk import CHANGELIST, ask, logged_in, messages_of
from tests.approvalapp.models import Counter
from toolcalling.models import ToolCall
from toolcalling.testutils import override_toolcalling


def decide_url(call):
    return f"{CHANGELIST}{call.pk}/decide/"


@pytest.fixture
def two_waiting(api, ops, model):
    """Two gated bumps of alice's, one of counter "orders" (it has a preview) and one of "refunds"."""
    Counter.objects.create(name="orders", value=5)
    first = ask(api, ops["id"], model, "bump", {"name": "orders", "by": 2}, "Two more orders, please")
    other = api.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json").json()
    second = ask(api, other["id"], model, "bump", {"name": "refunds", "by": 7}, "Seven more refunds")
    return first, second


def row_of(html, call):
    start = html.index(f'href="/admin/toolcalling/toolcall/{call.pk}/change/')
    row = html[html.rindex("<tr", 0, start) : html.index("</tr>", start)]
    return row


def test_each_row_shows_arguments_and_preview_as_labelled_lines_and_its_buttons(approver, two_waiting):
    first, second = two_waiting
    html = logged_in(approver).get(CHANGELIST).content.decode()
    row = row_of(html, first)
    assert '<dl class="tc-facts"><dt>by</dt><dd>2</dd><dt>name</dt><dd>orders</dd></dl>' in row  # by name
    assert '<td class="field-preview"><dl class="tc-facts">' in row  # the counter as it is now, by key
    assert f'formaction="{decide_url(first)}"' in row and 'name="_approve"' in row and 'name="_reject"' in row
    assert 'class="column-decided_by' not in html  # nobody decided a waiting call: the column is left out here
    assert f'formaction="{decide_url(second)}"' in row_of(html, second)


def test_a_rows_approve_decides_that_call_only_with_a_log_entry(approver, two_waiting):
    first, second = two_waiting
    staff = logged_in(approver)
    # The list's form is posted whole: another row's checkbox may be ticked, yet only this row's call is decided.
    response = staff.post(decide_url(first), {"_approve": "", "_selected_action": [second.pk]}, follow=True)
    assert response.redirect_chain[-1][0] == CHANGELIST
    assert messages_of(response) == ["Approved 1 tool call; a worker runs it."]
    first.refresh_from_db(), second.refresh_from_db()
    assert (first.status, first.decided_by, second.status) == ("approved", approver, "awaiting_approval")
    [entry] = LogEntry.objects.filter(object_id=str(first.pk))
    assert (entry.user, entry.change_message) == (approver, "Approved.")


def test_a_rows_reject_asks_for_the_reason_then_rejects_with_it(approver, two_waiting):
    first, second = two_waiting
    staff = logged_in(approver)
    page = staff.post(decide_url(second) + "?_changelist_filters=status%3Dall", {"_reject": ""})
    assert page.status_code == 200
    assert "Seven more refunds" not in page.content.decode() and "refunds" in page.content.decode()
    assert ToolCall.objects.get(pk=second.pk).status == "awaiting_approval"
    done = staff.post(
        decide_url(second) + "?_changelist_filters=status%3Dall",
        {"action": "reject_selected", "post": "yes", "reason": "Not this week", "_selected_action": [second.pk]},
    )
    assert done.status_code == 302 and done["Location"] == CHANGELIST + "?status=all"
    second.refresh_from_db(), first.refresh_from_db()
    assert (second.status, second.decision_reason, first.status) == ("rejected", "Not this week", "awaiting_approval")
    assert LogEntry.objects.get(object_id=str(second.pk)).change_message == "Rejected: Not this week"


def test_staff_without_the_permission_cannot_decide_a_row(two_waiting):
    first, _ = two_waiting
    viewer = get_user_model().objects.create_user("dave", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_toolcall"))
    response = logged_in(viewer).post(decide_url(first), {"_approve": ""})
    assert response.status_code == 403
    assert ToolCall.objects.get(pk=first.pk).status == "awaiting_approval"
    assert not LogEntry.objects.exists()


def test_a_row_keeps_the_four_eyes_rule(two_waiting, alice):
    first, _ = two_waiting
    alice.is_staff = True
    alice.save()
    alice.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    staff = logged_in(get_user_model().objects.get(pk=alice.pk))
    with override_toolcalling(APPROVER_MAY_BE_REQUESTER=False):
        html = staff.get(CHANGELIST).content.decode()
        assert 'name="_approve" formaction' in row_of(html, first) and " disabled title=" in row_of(html, first)
        response = staff.post(decide_url(first), {"_approve": ""}, follow=True)
    [skipped] = messages_of(response)
    assert skipped.startswith(f"Skipped: #{first.pk} bump: ")
    assert ToolCall.objects.get(pk=first.pk).status == "awaiting_approval"


def test_a_row_answers_only_a_post(approver, two_waiting):
    assert logged_in(approver).get(decide_url(two_waiting[0])).status_code == 405
    assert logged_in(approver).post(f"{CHANGELIST}999999/decide/", {"_approve": ""}).status_code == 404
