"""A turn's process killed with SIGKILL at a step of its turn — a real process, as the OOM killer or a deploy leaves
it — and the sweep going on from what is stored: nothing is asked of the model twice, and no call runs twice."""

import os
import signal
import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from tests import services
from tests.approval.test_decisions import assert_history_valid
from tests.approval.test_idempotency import delivered_keys
from toolcalling import approval
from toolcalling.conf import toolcalling_settings
from toolcalling.models import Conversation, ToolCall
from toolcalling.testing import ScriptedModel

TURN = """
import os, django
django.setup()
from django.contrib.auth import get_user_model
from toolcalling import Assistant
from toolcalling.models import Conversation
conversation = Conversation.objects.get(pk=os.environ["KILLED_CONVERSATION"])
Assistant.get("till_mortal").run(get_user_model().objects.get(username="alice"), "go", conversation=conversation)
"""


@pytest.fixture
def shared_model(transactional_db, model_switchboard):
    """A scripted model that this process and the killed one both talk to over HTTP."""
    board, base_url = model_switchboard
    board.current = scripted = ScriptedModel()
    merged = {**settings.TOOLCALLING, "BASE_URL": base_url, "API_KEY": "test-key", "MAX_RETRIES": 0}
    with override_settings(TOOLCALLING=merged):
        yield scripted, base_url
    board.current = ScriptedModel()


def killed_turn(alice, base_url, kill_at):
    """Run a turn of ``till_mortal`` in a process of its own that kills itself at ``kill_at``; its conversation."""
    conversation = Conversation.objects.create(user=alice, assistant_id="till_mortal")
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "TOOLCALLING_TEST_WORKER": "1",
        "TOOLCALLING_TEST_DB_NAME": str(connection.settings_dict["NAME"]),
        "TOOLCALLING_TEST_BASE_URL": base_url,
        "TOOLCALLING_TEST_KILL_AT": kill_at,
        "KILLED_CONVERSATION": str(conversation.pk),
    }
    turn = subprocess.run(
        [sys.executable, "-c", TURN], cwd=services.ROOT, env=environment, capture_output=True, timeout=120
    )
    assert turn.returncode == -signal.SIGKILL, turn.stderr.decode()
    conversation.refresh_from_db()
    assert conversation.status == "running"  # as a killed process leaves it
    quiet_since = timezone.now() - timedelta(seconds=toolcalling_settings.STALE_TURN_TIMEOUT + 1)
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=quiet_since)
    return conversation


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the killed process opens the SQLite test database file")
def test_killed_after_a_tool_ran_before_its_result_was_stored(alice, approver, shared_model):
    model, base_url = shared_model
    model.calls(("charge", {"amount": 1}), ("charge", {"amount": 2}))
    conversation = killed_turn(alice, base_url, "after_tool_call:1")
    assert list(delivered_keys("charge").values()) == [1]  # the first charge went through before the kill
    approval.sweep()
    first, second = ToolCall.objects.filter(conversation=conversation).order_by("index")
    assert (first.status, second.status) == ("outcome_unknown", "succeeded")  # not run again; run once
    assert sorted(delivered_keys("charge").values()) == [1, 1]  # each key delivered once
    assert len(model.requests) == 1
    model.reply("Both charges went through.")
    approval.settle(first, approver, "succeeded", "Charged 1.")
    assert len(model.requests) == 2  # only what comes next was asked for
    assert Conversation.objects.get(pk=conversation.pk).status == "idle"
    assert_history_valid(conversation.pk)
    model.assert_done()


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the killed process opens the SQLite test database file")
def test_killed_between_a_result_and_the_next_model_request(alice, shared_model):
    model, base_url = shared_model
    model.calls(("charge", {"amount": 5}))
    conversation = killed_turn(alice, base_url, "before_model_call:2")
    assert ToolCall.objects.get(conversation=conversation).status == "succeeded"  # stored before the kill
    model.reply("Charged 5.")
    assert [c.pk for c in approval.sweep().resumed] == [conversation.pk]
    assert len(model.requests) == 2  # the answer stored before the kill was not asked for again
    assert list(delivered_keys("charge").values()) == [1]
    assert Conversation.objects.get(pk=conversation.pk).status == "idle"
    assert_history_valid(conversation.pk)
    model.assert_done()
