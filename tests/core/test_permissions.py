"""Tools and MCP servers that ask for permissions, offered to users of any user model."""

import pytest
from django.contrib.auth.models import AnonymousUser, User

from toolcalling import ToolContext
from toolcalling.mcp import MCPServer
from toolcalling.toolkit import tools

PERMISSION = "auth.view_user"  # what tests.testapp's list_users asks for


class MemberWithoutPermissions:
    """What an instance of a custom user model without PermissionsMixin offers (Django allows such models): no
    has_perms. A plain class, since a model class defined here would join the test app's migrations."""

    is_active = True
    is_authenticated = True
    is_anonymous = False


def test_a_user_model_without_has_perms_is_not_offered_tools_that_ask_for_permissions():
    member = MemberWithoutPermissions()
    assert not hasattr(member, "has_perms")
    assert tools.get("list_users").user_may_use(member) is False
    assert tools.get("add").user_may_use(member) is True  # asks for nothing
    server = MCPServer(url="http://127.0.0.1:9/mcp", name="staff", permissions=[PERMISSION])
    assert server.get_tools(ToolContext(user=member), frozenset()) == []  # refused before anything is listed


@pytest.mark.django_db
def test_permissions_follow_has_perms_of_the_user():
    list_users = tools.get("list_users")
    assert list_users.user_may_use(AnonymousUser()) is False
    assert list_users.user_may_use(User.objects.create_user("plain")) is False
    assert list_users.user_may_use(User.objects.create_superuser("boss")) is True
