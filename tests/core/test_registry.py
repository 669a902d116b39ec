"""Registries and autodiscovery of tools.py and assistants.py."""

import pytest
from django.core.management import call_command

from toolcalling import Assistant, tool
from toolcalling.exceptions import AlreadyRegistered, NotRegistered
from toolcalling.toolkit import assistants, tools


def test_autodiscovery_found_the_test_apps_tools_and_assistants():
    assert tools.is_registered("add")
    assert tools.get("ship").module == "tests.testapp.tools.ship"
    assert assistants.is_registered("helper")
    assert [t.name for t in Assistant.get("helper").resolve_tools()][:2] == ["whoami", "add"]


def test_duplicate_tool_name_names_both_places():
    with pytest.raises(AlreadyRegistered) as info:

        @tool(name="add")
        def other_add(a: int) -> int:
            """Another add."""
            return a

    message = str(info.value)
    assert "'add'" in message
    assert "tests.testapp.tools.add" in message
    assert "test_duplicate_tool_name_names_both_places.<locals>.other_add" in message
    assert tools.get("add").module == "tests.testapp.tools.add"


def test_unregister_and_unknown_names():
    @tool
    def temporary() -> str:
        """Temporary."""
        return "x"

    assert tools.get("temporary") is temporary
    tools.unregister("temporary")
    with pytest.raises(NotRegistered, match="temporary"):
        tools.get("temporary")
    with pytest.raises(NotRegistered):
        tools.unregister("temporary")


def test_bare_decorator_keeps_the_function_callable():
    @tool
    def double(n: int) -> int:
        """Double a number."""
        return n * 2

    try:
        assert double(4) == 8
        assert double.name == "double"
    finally:
        tools.unregister("double")


def test_assistant_subclass_registers_by_id_and_abstract_bases_do_not():
    class Base(Assistant):
        instructions = "base"

    class Concrete(Base):
        id = "concrete-test"
        tools = ["add"]

    try:
        assert assistants.get("concrete-test") is Concrete
        assert Concrete.name == "Concrete test"
        assert not any(a is Base for a in assistants.all())
    finally:
        assistants.unregister("concrete-test")


def test_toolcalling_tools_command_lists_tools_and_schemas(capsys):
    call_command("toolcalling_tools")
    out = capsys.readouterr().out
    assert "ship  [tests.testapp.tools.ship]" in out
    assert '"order_no": {"description": "Order number, e.g. 20250719-0032"' in out
    assert "helper  Helper" in out
    call_command("toolcalling_tools", "--json")
    import json

    data = json.loads(capsys.readouterr().out)
    assert {t["name"] for t in data["tools"]} >= {"add", "ship", "delete_everything"}
    assert next(t for t in data["tools"] if t["name"] == "delete_everything")["requires_approval"] is True
