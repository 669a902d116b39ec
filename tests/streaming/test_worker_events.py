"""Background turns and staff decisions run by a real worker process (Celery's, or a db_worker of Django's Tasks);
their events reach the web process's readers through Redis."""

import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from toolcalling.models import Message, ToolCall

from .helpers import follow_until, post_streamed


@pytest.mark.each_runner
def test_a_background_turn_on_the_worker_streams_to_the_web_process(live_server, on_worker, conv, api):
    model = on_worker
    model.call("add", {"a": 40, "b": 2})
    model.reply("Forty-two, computed on the worker.")
    accepted = api.post(f"/api/toolcalling/conversations/{conv.pk}/messages/", {"content": "40+2?", "background": True})
    assert accepted.status_code == 202
    assert accepted.json()["status"] == "running"  # answered before the worker ran the turn

    stream = follow_until(live_server.url, conv.pk, accepted.json()["after"], "turn_end")
    assert stream.events[-1].data["status"] == "idle"
    stored = list(Message.objects.filter(conversation=conv).order_by("id"))
    assert [e.data["id"] for e in stream.of("message")] == [m.pk for m in stored]
    assert "".join(e.data["content"] for e in stream.of("delta")) == stored[-1].content
    assert stored[-1].content == "Forty-two, computed on the worker."
    model.assert_done()


@pytest.mark.each_runner
def test_a_staff_decision_run_by_the_worker_reaches_the_waiting_reader(live_server, on_worker, conv, api):
    model = on_worker
    model.call("delete_everything", {"confirm": "yes"})
    waiting = post_streamed(live_server.url, conv.pk, "Delete it all")
    assert waiting.events[-1].data["status"] == "awaiting_approval"
    call = ToolCall.objects.get(conversation=conv)

    carol = get_user_model().objects.create_user("carol", password="pw", is_staff=True)
    carol.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    model.reply("Everything is deleted, as approved.")
    with httpx2.Client(auth=("carol", "pw"), timeout=30) as staff:
        approved = staff.post(f"{live_server.url}/api/toolcalling/tool-calls/{call.pk}/approve/", json={})
        assert approved.status_code == 200, approved.text

    stream = follow_until(live_server.url, conv.pk, int(waiting.events[-1].id), "turn_end", "tool_call_decided")
    # Published by the web process when carol approved. approval.approve queues the run before it sends
    # the signal, so the worker's events may come before or after this one.
    decided = stream.of("tool_call_decided")
    assert [(e.data["name"], e.data["status"]) for e in decided] == [("delete_everything", "approved")]
    finished = stream.of("tool_call_finished")
    assert [(e.data["name"], e.data["status"]) for e in finished] == [("delete_everything", "succeeded")]
    assert stream.of("message")[-1].data["content"] == "Everything is deleted, as approved."
    assert stream.of("turn_end")[-1].data["status"] == "idle"
    model.assert_done()
