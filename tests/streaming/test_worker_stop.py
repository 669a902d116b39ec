"""Stopping a background turn that a real Celery worker runs: the stop request is stored in the database by the
web process, and the worker's turn ends at its next step; its events reach this process through Redis."""

import os
from pathlib import Path

from tests.limits.conftest import history_problems
from tests.services import wait_until
from toolcalling.models import Conversation, ToolCall

from .helpers import follow_until

URL = "/api/toolcalling/conversations/{}/"


def test_a_background_turn_on_the_worker_stops_at_its_next_step(live_server, on_worker, alice, api, tmp_path):
    model = on_worker
    conversation = Conversation.objects.create(user=alice, assistant_id="slow")
    marker = tmp_path / "job"
    model.calls(("wait_for_release", {"marker": str(marker)}), ("add", {"a": 1, "b": 2}))
    accepted = api.post(URL.format(conversation.pk) + "messages/", {"content": "a slow job", "background": True})
    assert accepted.status_code == 202, accepted.content

    started = Path(f"{marker}.started")
    wait_until(started.exists, what="the tool to start on the worker")
    assert int(started.read_text()) != os.getpid()  # the worker runs it, not this process
    stopping = api.post(URL.format(conversation.pk) + "stop/")
    assert stopping.status_code == 202 and stopping.json() == {"status": "running", "stop_requested": True}
    Path(f"{marker}.release").touch()  # the running tool finishes; the next call must not start

    stream = follow_until(live_server.url, conversation.pk, accepted.json()["after"], "turn_end")
    assert stream.events[-1].type == "turn_end"
    assert stream.events[-1].data == {**stream.events[-1].data, "status": "idle", "stopped": True}
    finished = [(e.data["name"], e.data["status"]) for e in stream.of("tool_call_finished")]
    assert finished == [("wait_for_release", "succeeded"), ("add", "cancelled")]
    assert "add" not in [e.data["name"] for e in stream.of("tool_call_started")]

    conversation.refresh_from_db()
    assert conversation.status == "idle" and conversation.stop_requested_at is None
    calls = ToolCall.objects.filter(conversation=conversation).order_by("index")
    assert [(c.name, c.status, c.result) for c in calls] == [
        ("wait_for_release", "succeeded", "released"),
        ("add", "cancelled", "Not run: stopped by the user."),
    ]
    assert history_problems(conversation.pk) == []
    model.assert_done()  # the model was asked once: no model call after the stop
