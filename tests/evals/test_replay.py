"""Replays: ``manage.py toolcalling_record`` writes a stored conversation, ``ReplayModel`` (through the
``toolcalling_replay`` fixture) serves it strictly, and a changed tool fails the replay with a readable diff."""

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from toolcalling import Assistant
from toolcalling.exceptions import ModelError
from toolcalling.testing import ReplayModel
from toolcalling.testutils import override_toolcalling
from toolcalling.toolkit import tools

QUESTIONS = ["Where is my order 20250719-0032?", "List my orders"]


@pytest.fixture
def recording(shop, tmp_path):
    """A two-turn conversation with the offline model, recorded; the database keeps the shop's data."""
    alice = get_user_model().objects.get(username="alice")
    with override_toolcalling(OFFLINE_MODEL=True):
        first = Assistant.get("shop").run(alice, QUESTIONS[0])
        Assistant.get("shop").run(alice, QUESTIONS[1], first.conversation)
    path = tmp_path / "status.json"
    out = StringIO()
    call_command("toolcalling_record", str(first.conversation.pk), "--output", str(path), stdout=out)
    assert f"4 model replies written to {path}" in out.getvalue()
    return path


def replay_turns(replay):
    alice = get_user_model().objects.get(username=replay.user)
    conversation = None
    for text in replay.user_messages:
        conversation = Assistant.get(replay.assistant).run(alice, text, conversation).conversation
    return conversation


def test_the_recording_holds_requests_and_replies(recording):
    data = json.loads(recording.read_text())
    assert (data["assistant"], data["user"], data["model"], data["user_messages"]) == (
        "shop",
        "alice",
        "offline",
        QUESTIONS,
    )
    first, second = data["exchanges"][:2]
    assert first["request"]["messages"] == [{"role": "user", "content": QUESTIONS[0]}]
    assert "get_order_status" in [t["name"] for t in first["request"]["tools"]]
    [call] = first["reply"]["tool_calls"]
    assert (call["name"], call["arguments"]) == ("get_order_status", {"order_no": "20250719-0032"})
    assert second["request"]["messages"][-1]["role"] == "tool"
    assert '"state":"shipped"' in second["request"]["messages"][-1]["content"]


def test_a_replay_passes_when_the_requests_are_the_recorded_ones(recording, toolcalling_replay):
    replay = toolcalling_replay(recording)
    conversation = replay_turns(replay)
    assert len(replay.requests) == 4 and not replay.mismatches
    assert conversation.tool_calls.filter(name="get_order_status", status="succeeded").exists()
    assert "shipped" in conversation.messages.filter(role="assistant").order_by("id")[1].content


def test_a_changed_tool_description_fails_the_replay_with_a_diff(recording, monkeypatch):
    monkeypatch.setattr(tools.get("get_order_status"), "description", "Find one order by its number.")
    replay = ReplayModel(recording)
    from toolcalling.testing import OpenAICompatibleServer

    with OpenAICompatibleServer(replay) as server, override_toolcalling(BASE_URL=server.base_url, MODEL="offline"):
        with pytest.raises(ModelError, match="request #1 differs from the recording"):
            replay_turns(replay)
    with pytest.raises(AssertionError) as failed:
        replay.assert_done()
    text = str(failed.value)
    assert '-      "description": "Where is my order? Track the status of one order' in text
    assert '+      "description": "Find one order by its number."' in text
    assert "4 recorded replies were never requested" not in text  # one was asked for, and refused
    assert "3 recorded replies were never requested" in text


def test_other_arguments_fail_the_replay(recording, tmp_path):
    data = json.loads(recording.read_text())
    data["exchanges"][0]["reply"]["tool_calls"][0]["arguments"] = {"order_no": "20251120-0007"}
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(data))
    replay = ReplayModel(changed)
    from toolcalling.testing import OpenAICompatibleServer

    with OpenAICompatibleServer(replay) as server, override_toolcalling(BASE_URL=server.base_url, MODEL="offline"):
        with pytest.raises(ModelError):
            replay_turns(replay)
    # The model was served the other order number, so the second request's history (call and result) differs.
    assert replay.mismatches and "request #2 differs" in replay.mismatches[0]
    assert '"order_no": "20251120-0007"' in replay.mismatches[0]


def test_recording_an_unknown_conversation_is_an_error(transactional_db, tmp_path):
    with pytest.raises(CommandError, match="No conversation 'nope'"):
        call_command("toolcalling_record", "nope", "--output", str(tmp_path / "x.json"))
