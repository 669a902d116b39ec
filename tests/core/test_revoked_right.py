"""What an approved call's run checks again, said the way the stored error says it: the account, the
assistant's permission, then each permission the tool needs, all of them named."""

from __future__ import annotations

from django.contrib.auth.models import Permission

from toolcalling import Assistant
from toolcalling.engine._calls import revoked_right
from toolcalling.toolkit._tool import make_tool


def export_users(limit: int) -> str:
    """Export the user list."""
    return "exported"


EXPORT = make_tool(export_users, permissions=["auth.view_user", "auth.change_user"])


class Exporter(Assistant):
    id = "exporter"
    tools = [EXPORT]


class Guarded(Assistant):
    id = "guarded"
    permission = "auth.view_group"
    tools = [EXPORT]


def grant(user, *codenames):
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="auth", codename__in=codenames))
    return type(user).objects.get(pk=user.pk)  # a fresh user: Django caches the permissions it read


def test_a_tool_that_needs_two_permissions_names_both_when_one_is_missing(alice):
    alice = grant(alice, "view_user")
    reason = revoked_right(Exporter(), alice, "export_users")
    assert reason == "the user no longer has the permissions this tool needs (auth.view_user, auth.change_user)"


def test_holding_every_permission_the_tool_needs_leaves_nothing_to_say(alice):
    alice = grant(alice, "view_user", "change_user")
    assert revoked_right(Exporter(), alice, "export_users") is None


def test_a_tool_the_assistant_no_longer_offers_is_not_judged_here(alice):
    assert revoked_right(Exporter(), alice, "gone") is None


def test_the_assistant_permission_is_checked_before_the_tool(alice):
    reason = revoked_right(Guarded(), alice, "export_users")
    assert reason == "the user may no longer use the assistant 'guarded'"


def test_an_inactive_account_is_said_first_whatever_else_is_missing(alice):
    alice.is_active = False
    assert revoked_right(Guarded(), alice, "export_users") == "the user's account is no longer active"
