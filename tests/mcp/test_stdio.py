"""``manage.py toolcalling_mcp`` serves the same over stdio: the SDK's stdio client starts the command."""

import json
import os
import sys

import pytest
from django.db import connection
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from toolcalling.models import ToolCall

from .helpers import ROOT, run_async, text_of

pytestmark = pytest.mark.django_db(transaction=True)  # the command's process reads the test database


def serve(*options):
    env = {
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "TOOLCALLING_TEST_WORKER": "1",  # the test database file, as a worker process opens it
        "TOOLCALLING_TEST_DB_NAME": str(connection.settings_dict["NAME"]),
        "TOOLCALLING_TEST_BASE_URL": "http://127.0.0.1:9/v1",  # no model is asked
        # The SDK starts a server with a few safe variables only: the run's directory and database go along.
        **{
            name: os.environ[name]
            for name in ("TOOLCALLING_TEST_VAR", "TOOLCALLING_TEST_DATABASE", "TOOLCALLING_TEST_MARIADB_PORT")
            if name in os.environ
        },
    }
    args = ["-m", "django", "toolcalling_mcp", *options]
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(ROOT))


def session(params, use):
    async def main():
        async with Client(params) as client:
            return await use(client)

    return run_async(main)


def test_stdio_serves_the_users_tools_and_stores_the_calls(alice):
    async def use(client):
        tools = {t.name for t in (await client.list_tools()).tools}
        whoami = await client.call_tool("whoami", {})
        waiting = await client.call_tool("delete_everything", {"confirm": "yes"})
        return tools, whoami, waiting

    tools, whoami, waiting = session(serve("--assistant", "helper", "--user", "alice"), use)
    assert "whoami" in tools and "list_users" not in tools and "get_tool_call_status" in tools
    assert json.loads(text_of(whoami)) == {"username": "alice", "tenant": "acme"}
    gated = ToolCall.objects.get(name="delete_everything")
    assert waiting.structured_content == {
        "tool_call_id": gated.pk,
        "tool": "delete_everything",
        "status": "awaiting_approval",
    }
    assert gated.conversation.user == alice and gated.status == "awaiting_approval"


def test_an_unknown_user_or_assistant_stops_the_command_with_a_message(alice):
    import os
    import subprocess

    for options, message in (
        (["--assistant", "helper", "--user", "nobody"], "No user 'nobody'."),
        (["--assistant", "nope", "--user", "alice"], "No assistant named 'nope'"),
    ):
        params = serve(*options)
        done = subprocess.run(
            [params.command, *params.args],
            env={**os.environ, **params.env},
            cwd=params.cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1 and message in done.stderr
        assert done.stdout == ""  # stdout belongs to the protocol
