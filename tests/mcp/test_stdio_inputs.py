"""The stdio server against hostile lines: each gets a JSON-RPC error and the server answers the next one; stdout
carries JSON-RPC only, even when approval e-mails go to the console; an inactive user is refused as over HTTP."""

import json
import os
import subprocess

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from toolcalling.models import ToolCall

from .test_stdio import serve

pytestmark = pytest.mark.django_db(transaction=True)  # the command's process reads the test database

PING = b'{"jsonrpc":"2.0","id":99,"method":"ping"}\n'


def deep(levels):
    value = 1
    for _ in range(levels):
        value = [value]
    return value


def run(lines, *options, **env):
    """Start the command, send ``lines`` (bytes), close stdin; its exit code, stdout lines parsed, stderr."""
    params = serve(*options)
    done = subprocess.run(
        [params.command, *params.args],
        env={**os.environ, **params.env, **env},
        cwd=params.cwd,
        input=b"".join(lines),
        capture_output=True,
        timeout=120,
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr.decode()


def test_every_bad_line_gets_an_error_and_the_server_answers_the_next(alice):
    call_deep = {"name": "add", "arguments": {"a": deep(600), "b": 1}}
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"ping"\xff\xfe}\n',  # not UTF-8
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"\\ud800","arguments":{}}}\n',
        b'{"jsonrpc":"2.0","id":3,"method":"\\udfff"}\n',
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": call_deep}).encode() + b"\n",
        b'{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{"_meta":[1,2]}}\n',
        b"[" + b",".join([PING.strip()] * 21) + b"]\n",  # over MCP_MAX_BATCH
        PING,
    ]
    code, replies, stderr = run(lines, "--assistant", "helper", "--user", "alice")
    assert code == 0, stderr
    errors = [reply["error"]["code"] for reply in replies[:-1]]
    assert errors == [-32700, -32602, -32601, -32600, -32022, -32600]
    assert (
        replies[1]["error"]["message"] == "Unknown tool: \ufffd"
    )  # the surrogate, made storable, is named as the unknown tool
    assert "Traceback" not in stderr  # each was refused as bad input, none failed as a bug
    assert replies[-1] == {"jsonrpc": "2.0", "id": 99, "result": {}}
    assert not ToolCall.objects.exists()


def test_a_gated_calls_console_mail_goes_to_stderr_not_into_the_protocol(alice):
    staff = get_user_model().objects.create_user("carol", email="carol@example.com", password="pw", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    gated = {"name": "delete_everything", "arguments": {"confirm": "yes"}}
    lines = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": gated}).encode() + b"\n", PING]
    code, replies, stderr = run(lines, "--assistant", "helper", "--user", "alice", TOOLCALLING_TEST_CONSOLE_MAIL="1")
    assert code == 0, stderr
    assert [reply["id"] for reply in replies] == [1, 99]  # every stdout line is JSON-RPC (json.loads read each)
    assert replies[0]["result"]["structuredContent"]["status"] == "awaiting_approval"
    assert "Approval needed: delete_everything" in stderr and "To: carol@example.com" in stderr


def test_an_inactive_user_is_refused_as_over_http(alice):
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    code, replies, stderr = run([PING], "--assistant", "helper", "--user", "alice")
    assert code == 1 and "The user 'alice' is inactive." in stderr
    assert replies == []
