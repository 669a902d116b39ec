"""schemathesis against a live server with the app's OpenAPI schema: no server errors, no response that breaks it.

The test site's own schema (drf-spectacular, at /api/schema/) is what schemathesis reads; it sends
generated requests, valid and invalid, to every operation, with the ids of real objects most of the time
(a config file binds ``{id}`` to them) so it reaches more than 404s. The model is the offline one: every
turn really runs. Runs are derandomised (a fixed seed), so a failure is the same on every machine.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.testutils import override_toolcalling

CHECKS = "not_a_server_error,response_schema_conformance,content_type_conformance,status_code_conformance"


@pytest.fixture
def data(transactional_db) -> dict[str, list]:
    """An approver with conversations in every state, and tool calls waiting, decided and run."""
    carol = get_user_model().objects.create_superuser("carol", "carol@example.com", "pw")
    conversations, calls = [], []
    for status in ("idle", "awaiting_approval", "failed"):
        conversation = Conversation.objects.create(user=carol, assistant_id="helper", title=status, status=status)
        Message.objects.create(conversation=conversation, role="user", content="Please delete everything")
        asked = Message.objects.create(conversation=conversation, role="assistant", content="")
        call_status = "awaiting_approval" if status == "awaiting_approval" else "succeeded"
        call = ToolCall.objects.create(
            conversation=conversation,
            message=asked,
            index=0,
            call_id=f"call_{status}",
            name="delete_everything",
            arguments={"confirm": "yes"},
            raw_arguments='{"confirm": "yes"}',
            status=call_status,
            requires_approval=True,
        )
        if call_status == "succeeded":
            Message.objects.create(conversation=conversation, role="tool", tool_call_id=call.call_id, content="ok")
        conversations.append(str(conversation.pk))
        calls.append(call.pk)
    return {"token": Token.objects.create(user=carol).key, "conversations": conversations, "tool_calls": calls}


def config(path: Path, data: dict) -> Path:
    conversations = json.dumps(data["conversations"])
    path.write_text(
        f"""
[dictionaries.conversations]
values = {conversations}

[dictionaries.tool_calls]
values = {json.dumps(data["tool_calls"])}

[[operations]]
include-path-regex = "/conversations/[{{]id[}}]/"
parameters = {{ "path.id" = {{ dictionary = "conversations", probability = 0.8 }} }}

[[operations]]
include-path-regex = "/tool-calls/[{{]id[}}]/"
parameters = {{ "path.id" = {{ dictionary = "tool_calls", probability = 0.8 }} }}
"""
    )
    return path


@pytest.mark.once  # the API's schema and its answers, whatever stores them: in the full pass only
@pytest.mark.timeout(400)  # some 900 generated requests, each a real one
@override_toolcalling(OFFLINE_MODEL=True, EVENTS_IDLE_TIMEOUT=0.2, EVENTS_KEEPALIVE=0.1)
def test_schemathesis_finds_no_server_error_and_no_response_that_breaks_the_schema(live_server, data, tmp_path):
    command = [
        *(sys.executable, "-m", "schemathesis.cli"),
        *("--config-file", str(config(tmp_path / "schemathesis.toml", data))),
        "run",
        f"{live_server.url}/api/schema/",
        *("--include-path-regex", "^/api/toolcalling/"),
        *("--checks", CHECKS),
        *("--header", f"Authorization: Token {data['token']}"),
        *("--max-examples", "10", "--seed", "20251130", "--workers", "1"),
        *("--request-timeout", "30", "--no-color", "--output-truncate", "true"),
    ]
    # In tmp_path: schemathesis keeps a cache folder in its working directory.
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    report = tmp_path / "schemathesis.txt"
    report.write_text(result.stdout + result.stderr)
    assert result.returncode == 0, f"see {report}\n" + result.stdout[-6000:] + result.stderr[-3000:]
    generated = re.search(r"(\d+) generated, (\d+) passed", result.stdout)
    assert generated and generated[1] == generated[2] and int(generated[1]) > 300, result.stdout[-2000:]
