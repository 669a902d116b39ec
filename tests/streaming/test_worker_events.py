"""Background turns and staff decisions run by a real Celery worker process; their events reach the web
process's readers through Redis."""

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import override_settings

from tests import services
from tests.celery_app import app as celery_app
from toolcalling.models import Message, ToolCall
from toolcalling.testing import ScriptedModel

from .conftest import BROKER_URL
from .helpers import AUTH, SSE, Stream, parse, post_streamed


@pytest.fixture(scope="module")
def board() -> Iterator[tuple[services.Switchboard, str]]:
    with services.switchboard_server() as switchboard:
        yield switchboard


@pytest.fixture(scope="module")
def worker_process(redis_url, board, django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[None]:
    """A Celery worker of the test site on its own broker, its events going to the same Redis."""
    log = tmp_path_factory.mktemp("stream-worker") / "worker.log"
    with django_db_blocker.unblock():
        db_name = str(connection.settings_dict["NAME"])
    env = {
        "CELERY_BROKER_URL": BROKER_URL,
        "CELERY_RESULT_BACKEND": BROKER_URL,
        "TOOLCALLING_TEST_EVENTS_REDIS_URL": redis_url,
    }
    options = ("--pool=threads", "--concurrency=2", "--hostname", "streaming-tests@%h")
    process = services.start_worker(log, *options, db_name=db_name, base_url=board[1], env=env)
    try:
        services.wait_for_worker(process, log)
        yield
    finally:
        services.stop_worker(process, log)


@pytest.fixture
def on_worker(worker_process, board, redis_events, transactional_db) -> Iterator[ScriptedModel]:
    """Tasks go to the worker; this process and the worker ask the same scripted model."""
    switchboard, base_url = board
    switchboard.current = scripted = ScriptedModel()
    merged = {**settings.TOOLCALLING, "BASE_URL": base_url, "API_KEY": "test-key", "MAX_RETRIES": 0}
    merged["EVENTS_KEEPALIVE"] = 0.5  # streams whose reader left notice it soon, before Redis stops
    try:
        with services.celery_conf(celery_app, task_always_eager=False, broker_url=BROKER_URL):
            with override_settings(TOOLCALLING=merged):
                yield scripted
    finally:
        switchboard.current = ScriptedModel()


def follow_until(base: str, conversation_id: Any, after: int, *types: str) -> Stream:
    """Read the events endpoint until an event of each of ``types`` has arrived."""
    url = f"{base}/api/toolcalling/conversations/{conversation_id}/events/"
    wanted = set(types)

    def seen_all(event: Any) -> bool:
        wanted.discard(event.type)
        return not wanted

    with httpx2.Client(auth=AUTH, timeout=60) as client:
        with client.stream("GET", url, params={"after": after}, headers=SSE) as response:
            assert response.status_code == 200
            return parse(response.iter_lines(), Stream(), stop=seen_all)


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
