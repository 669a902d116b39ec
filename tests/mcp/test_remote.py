"""MCP servers' tools for the site's assistants: SDK-built servers in subprocesses (HTTP and stdio), used by
assistants through the strict model server."""

import time

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from tests.services import free_port
from toolcalling import approval
from toolcalling.exceptions import ImproperlyDefined
from toolcalling.mcp import MCPServer
from toolcalling.models import ToolCall

from .helpers import ROOT, calc_command

ALLOWED = ["add", "weather", "whoami", "fail", "nap", "charge"]


def tool_results(result):
    return [m.content for m in result.messages if m.role == "tool"]


def test_remote_tools_join_the_assistants_tools(alice, model, calc, make_assistant):
    helper = make_assistant(
        id="remote",
        tools=["add"],
        mcp_servers=[
            MCPServer(
                url=calc.url,
                name="calc",
                allowed_tools=ALLOWED,
                headers=lambda ctx: {"X-User": ctx.user.get_username()},
            )
        ],
    )()
    model.call("whoami", {})
    model.call("calc_add", {"a": 2, "b": 40})
    model.reply("Done.")
    result = helper.run(alice, "Who am I, and what is 2 + 40?")
    tools = model.tool_definitions(0)
    # The local add keeps its name; the remote one is prefixed; secret is not allowed.
    assert set(tools) == {"add", "calc_add", "weather", "whoami", "fail", "nap", "charge"}
    assert tools["weather"]["parameters"]["properties"]["city"]["type"] == "string"  # the server's schema
    assert tools["calc_add"]["description"] == "Add two integers on the remote server."
    whoami, added = tool_results(result)
    assert whoami.startswith("user=alice pid=")  # the per-user header reached the server
    assert added == "42"
    assert result.reply == "Done."
    assert list(ToolCall.objects.values_list("name", "status")) == [("whoami", "succeeded"), ("calc_add", "succeeded")]


def test_arguments_are_checked_against_the_remote_schema_before_the_server_is_asked(alice, model, calc, make_assistant):
    helper = make_assistant(id="remote", mcp_servers=[MCPServer(url=calc.url, name="calc")])()
    model.call("charge", {"account": "acme", "amount": "lots"})
    model.reply("Sorry.")
    charged = len(calc.charges())
    result = helper.run(alice, "Charge acme")
    assert tool_results(result) == [
        "Error: invalid arguments for charge: amount: 'lots' is not of type 'integer'. Fix them and call again."
    ]
    assert len(calc.charges()) == charged


def test_a_failing_or_stopped_server_is_the_tools_result_and_the_turn_goes_on(alice, model, own_calc, make_assistant):
    calc = own_calc
    helper = make_assistant(id="remote", mcp_servers=[MCPServer(url=calc.url, name="calc", timeout=5)])()
    model.call("fail", {"reason": "out of paper"})
    model.reply("It failed.")
    first = helper.run(alice, "Print")
    assert tool_results(first)[0].startswith("Error: MCPToolError: Error executing tool fail")
    assert first.status == "idle" and first.reply == "It failed."

    calc.stop()  # the server goes down; its tools are still known from the cached listing
    model.call("weather", {"city": "Oslo"})
    model.reply("The weather service is down.")
    second = helper.run(alice, "Weather in Oslo?", first.conversation)
    assert "weather" in model.tool_definitions(-2)
    (text,) = tool_results(second)
    assert text.startswith("Error: MCPServerError: the MCP server 'calc' failed (calling weather): ConnectError")
    assert second.status == "idle" and second.reply == "The weather service is down."


def test_a_slow_server_times_out(alice, model, calc, make_assistant):
    helper = make_assistant(id="remote", mcp_servers=[MCPServer(url=calc.url, name="calc", timeout=2)])()
    model.call("nap", {"seconds": 10})
    model.reply("Too slow.")
    result = helper.run(alice, "Rest")
    assert tool_results(result) == [
        "Error: MCPServerError: the MCP server 'calc' did not answer within 2 s (calling nap)"
    ]
    assert result.reply == "Too slow."


def test_a_server_that_is_down_from_the_start_leaves_its_tools_out(alice, model, make_assistant):
    started = time.monotonic()
    helper_cls = make_assistant(
        id="remote", tools=["add"], mcp_servers=[MCPServer(url=f"http://127.0.0.1:{free_port()}/mcp", timeout=3)]
    )
    assert time.monotonic() - started < 1  # defining it asks nothing: tools are listed when a turn starts
    model.reply("Only local tools today.")
    result = helper_cls().run(alice, "Hello")
    assert set(model.tool_definitions(0)) == {"add"}
    assert result.reply == "Only local tools today."


def test_stdio_server_with_a_prefix(alice, model, make_assistant):
    server = MCPServer(command=calc_command(), cwd=ROOT, prefix="local", allowed_tools=["weather"], timeout=20)
    helper = make_assistant(id="remote", mcp_servers=[server])()
    model.call("local_weather", {"city": "Bergen"})
    model.reply("Sunny.")
    result = helper.run(alice, "Weather in Bergen?")
    assert set(model.tool_definitions(0)) == {"local_weather"}
    assert tool_results(result) == ["Sunny in Bergen"]


def test_tool_search_finds_remote_tools(alice, model, calc, make_assistant):
    helper = make_assistant(id="remote", tool_search=True, mcp_servers=[MCPServer(url=calc.url, name="calc")])()
    model.call("search_tools", {"query": "weather in a city"})
    model.call("weather", {"city": "Rome"})
    model.reply("Sunny in Rome.")
    result = helper.run(alice, "Weather in Rome?")
    assert set(model.tool_definitions(0)) == {"search_tools"}
    assert "weather" in tool_results(result)[0]
    assert "weather" in model.tool_definitions(1)
    assert tool_results(result)[1] == "Sunny in Rome"


def test_a_gated_remote_tool_runs_once_when_approved(
    alice, model, calc, make_assistant, django_capture_on_commit_callbacks
):
    helper = make_assistant(
        id="remote", mcp_servers=[MCPServer(url=calc.url, name="calc", requires_approval=["charge"])]
    )()
    model.call("charge", {"account": "acme", "amount": 5})
    charged = len(calc.charges())
    first = helper.run(alice, "Charge acme 5")
    (waiting,) = first.awaiting_approval
    assert first.status == "awaiting_approval" and len(calc.charges()) == charged

    approver = get_user_model().objects.create_user("carol", password="pw", is_staff=True)
    approver.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    model.reply("Charged.")
    with django_capture_on_commit_callbacks(execute=True):  # the task runs eagerly, as a worker would
        approval.approve(waiting, get_user_model().objects.get(pk=approver.pk))
    waiting.refresh_from_db()
    assert (waiting.status, waiting.result) == ("succeeded", "charged 5 to acme")
    assert len(calc.charges()) == charged + 1
    assert model.messages(-1)[-1]["content"] == "charged 5 to acme"  # the model goes on


def test_mistakes_in_a_server_definition_fail_at_once():
    with pytest.raises(ImproperlyDefined, match="exactly one of url="):
        MCPServer()
    with pytest.raises(ImproperlyDefined, match="command must be a non-empty list"):
        MCPServer(command="python server.py")
    with pytest.raises(ImproperlyDefined, match="headers= only applies"):
        MCPServer(command=["x"], headers={"A": "b"})
