"""Notifications that work from a mail client: absolute links, the right recipients, the preview in the text."""

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.sites.models import Site
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from tests.approvalapp.models import Counter
from toolcalling.checks import check_site_url
from toolcalling.conf import toolcalling_settings
from toolcalling.models import ToolCall
from toolcalling.notifications import approval_notice, approval_url, approvers
from toolcalling.testutils import override_toolcalling

URL = "/api/toolcalling/"


def ask(api, conversation_id, model, tool, arguments):
    model.call(tool, arguments)
    response = api.post(f"{URL}conversations/{conversation_id}/messages/", {"content": "please"}, format="json")
    assert response.status_code == 201, response.content
    return ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])


@pytest.fixture
def waiting(api, ops, model):
    return ask(api, ops["id"], model, "bump", {"name": "orders", "by": 2})


def test_links_are_absolute_from_site_url(waiting):
    with override_toolcalling(SITE_URL="https://shop.example.com/"):
        assert approval_url(waiting) == f"https://shop.example.com/admin/toolcalling/toolcall/{waiting.pk}/change/"


def test_without_site_url_links_come_from_the_sites_framework(waiting):
    Site.objects.filter(pk=1).update(domain="desk.example.org")
    Site.objects.clear_cache()
    with override_toolcalling(SITE_URL=None):
        assert approval_url(waiting) == f"https://desk.example.org/admin/toolcalling/toolcall/{waiting.pk}/change/"
    Site.objects.clear_cache()


def test_without_either_links_stay_relative_and_a_system_check_warns(waiting):
    apps_without_sites = [app for app in _installed_apps() if app != "django.contrib.sites"]
    with override_toolcalling(SITE_URL=None), override_settings(INSTALLED_APPS=apps_without_sites):
        assert approval_url(waiting) == f"/admin/toolcalling/toolcall/{waiting.pk}/change/"
        [warning] = check_site_url()
        assert warning.id == "toolcalling.W002"
        assert "bump" in warning.msg and "cancel_order" in warning.msg  # the tools staff decide
        assert "move_points" not in warning.msg  # the user confirms that one: no staff link needed
    with (
        override_toolcalling(SITE_URL="https://shop.example.com"),
        override_settings(INSTALLED_APPS=apps_without_sites),
    ):
        assert check_site_url() == []
    assert check_site_url() == []  # the test site has django.contrib.sites


def test_site_url_must_be_a_url():
    with override_toolcalling(SITE_URL="shop.example.com"):
        with pytest.raises(ImproperlyConfigured, match="SITE_URL"):
            toolcalling_settings.SITE_URL  # noqa: B018


def test_the_notice_has_who_asked_the_arguments_the_preview_and_the_link(waiting):
    Counter.objects.create(name="orders", value=5)
    notice = approval_notice(waiting)
    assert notice.subject == "Approval needed: bump"
    assert notice.url == f"http://testserver/admin/toolcalling/toolcall/{waiting.pk}/change/"
    assert notice.body == (
        "alice asked the assistant “Ops” to run bump.\n\n"
        'Arguments:\n{\n  "by": 2,\n  "name": "orders"\n}\n\n'
        "Preview:\ncounter: orders\nnow: 5\nafter: 7\nfor: alice\n\n"
        f"Approve or reject it here: {notice.url}\n"
    )
    assert notice.preview.value["now"] == 5


def test_a_preview_that_raises_is_named_in_the_notice(api, ops, model):
    call = ask(api, ops["id"], model, "bump", {"name": "locked"})
    notice = approval_notice(call)
    assert "Preview:\n(the preview failed: PermissionError: the counter 'locked' cannot be read)" in notice.body


def test_approvers_are_those_who_may_approve_never_the_requester_by_default(api, ops, model, alice):
    users = get_user_model().objects
    perm = Permission.objects.get(codename="approve_toolcall")
    direct = users.create_user("carol", email="carol@example.com")
    direct.user_permissions.add(perm)
    group = Group.objects.create(name="approvers")
    group.permissions.add(perm)
    users.create_user("gina", email="gina@example.com").groups.add(group)
    users.create_superuser("root", "root@example.com", "pw")
    users.create_user("nomail", email="").user_permissions.add(perm)
    inactive = users.create_user("gone", email="gone@example.com", is_active=False)
    inactive.user_permissions.add(perm)
    users.create_user("bob2", email="bob@example.com")  # no permission
    alice.email = "alice@example.com"
    alice.save()
    alice.user_permissions.add(perm)  # an approver who asked herself: four eyes leave her out
    call = ask(api, ops["id"], model, "bump", {"name": "orders"})
    assert sorted(u.username for u in approvers(call)) == ["carol", "gina", "root"]
    with override_toolcalling(APPROVER_MAY_BE_REQUESTER=True):
        assert sorted(u.username for u in approvers(call)) == ["alice", "carol", "gina", "root"]


def test_nobody_on_staff_is_told_of_a_call_the_user_confirms(api, ops, model, mailoutbox):
    get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    call = ask(api, ops["id"], model, "move_points", {"name": "p", "points": 1})
    assert list(approvers(call)) == []
    assert mailoutbox == []  # the demo shop's receiver sends nothing for it


def _installed_apps():
    return list(settings.INSTALLED_APPS)
