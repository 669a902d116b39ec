"""Background turns: 202 at once, the turn on Celery, its events on the conversation's stream."""

import pytest

from tests import services
from tests.celery_app import app as celery_app
from toolcalling.models import Conversation, Message, UsageCounter
from toolcalling.streaming._store import EventStore

from .helpers import get_events

URL = "/api/toolcalling/conversations/{}/messages/"


@pytest.mark.each_api
@pytest.mark.toolcalling(EVENTS_IDLE_TIMEOUT=0.3)
def test_background_turn_answers_202_and_its_events_follow(live_server, model, conv, api):
    model.call("add", {"a": 20, "b": 22})
    model.reply("It is forty-two.")
    accepted = api.post(URL.format(conv.pk), {"content": "20 + 22?", "background": True}, format="json")
    assert accepted.status_code == 202, accepted.content
    body = accepted.json()
    assert body["events"].endswith(f"/api/toolcalling/conversations/{conv.pk}/events/?after={body['after']}")

    stream = get_events(live_server.url, conv.pk, after=body["after"])
    assert stream.types[0] == "message" and stream.types[-1] == "turn_end"
    stored = list(Message.objects.filter(conversation=conv).order_by("id"))
    assert [e.data["id"] for e in stream.of("message")] == [m.pk for m in stored]
    assert "".join(e.data["content"] for e in stream.of("delta")) == stored[-1].content == "It is forty-two."
    model.assert_done()


def test_background_turn_is_refused_while_busy(model, conv, api):
    Conversation.objects.filter(pk=conv.pk).update(status="running")
    busy = api.post(URL.format(conv.pk), {"content": "hi", "background": True}, format="json")
    assert busy.status_code == 409 and busy.json()["code"] == "conversation_busy"


def test_an_unreachable_broker_releases_the_conversation(model, conv, api):
    # Nothing listens on port 9: publishing the task fails at once. Fresh connections on the way in and
    # out, so the task is not sent to a broker an earlier test used, and later tests do not get port 9.
    unreachable = {"broker_url": "redis://127.0.0.1:9/0", "broker_transport_options": {"max_retries": 0}}
    with services.celery_conf(celery_app, task_always_eager=False, **unreachable):
        response = api.post(URL.format(conv.pk), {"content": "hi", "background": True}, format="json")
    assert response.status_code == 503 and response.json()["code"] == "queue_unavailable"
    conv.refresh_from_db()
    assert conv.status == "idle"
    assert not Message.objects.filter(conversation=conv).exists()
    # The next message works.
    model.reply("Hello.")
    assert api.post(URL.format(conv.pk), {"content": "hi"}, format="json").status_code == 201


def lost_events(caplog, conversation) -> list[tuple[str, str]]:
    """(how, type) of each event the log says was lost: ``tried`` when publishing failed, ``skipped`` when
    it was not tried because the stream had just failed."""
    lost = []
    for record in caplog.records:
        message = record.getMessage()
        if message.startswith("could not publish the "):
            lost.append(("tried", message.removeprefix("could not publish the ").split(" ")[0]))
        elif message.endswith(" not published: the event stream is unreachable"):
            lost.append(("skipped", message.split(" ")[0]))
        else:
            continue
        assert str(conversation.pk) in message
    return lost


# The events of the add-then-answer turn below: the user's message, the answer with the call, the call
# started, the tool message, the call finished, the final answer, the end.
TURN_EVENTS = ["message", "message", "tool_call_started", "message", "tool_call_finished", "message", "turn_end"]


@pytest.mark.toolcalling(EVENTS_REDIS_URL="redis://127.0.0.1:9/0")
def test_an_unreachable_event_stream_does_not_fail_the_turn(model, conv, api, caplog, monkeypatch):
    # After a failure the stream is not tried for RETRY_AFTER seconds. Longer than any turn here, so what
    # follows does not depend on how fast this machine runs the turn.
    monkeypatch.setattr(EventStore, "RETRY_AFTER", 3600.0)
    model.call("add", {"a": 1, "b": 2})
    model.reply("Three.")
    response = api.post(URL.format(conv.pk), {"content": "1+2?"}, format="json")
    assert response.status_code == 201 and response.json()["status"] == "idle"
    assert [m["content"] for m in response.json()["messages"]][-1] == "Three."
    # Every event of the turn is in the log; only the first one waited for a connection.
    assert lost_events(caplog, conv) == [("tried", TURN_EVENTS[0])] + [("skipped", t) for t in TURN_EVENTS[1:]]


@pytest.mark.toolcalling(EVENTS_REDIS_URL="redis://127.0.0.1:9/0")
def test_an_unreachable_event_stream_is_tried_again_once_the_retry_window_is_over(
    model, conv, api, caplog, monkeypatch
):
    monkeypatch.setattr(EventStore, "RETRY_AFTER", 0.0)  # every window is over by the next event
    model.call("add", {"a": 1, "b": 2})
    model.reply("Three.")
    response = api.post(URL.format(conv.pk), {"content": "1+2?"}, format="json")
    assert response.status_code == 201 and response.json()["status"] == "idle"
    assert lost_events(caplog, conv) == [("tried", t) for t in TURN_EVENTS]


@pytest.mark.toolcalling(EVENTS_IDLE_TIMEOUT=0.3, USAGE_LIMITS=[{"turns": 1, "per": "user", "period": "day"}])
def test_a_turn_that_could_not_be_queued_gives_back_the_turn_its_claim_counted(model, conv, api, alice):
    unreachable = {"broker_url": "redis://127.0.0.1:9/0", "broker_transport_options": {"max_retries": 0}}
    with services.celery_conf(celery_app, task_always_eager=False, **unreachable):
        response = api.post(URL.format(conv.pk), {"content": "hi", "background": True}, format="json")
    assert response.status_code == 503 and response.json()["code"] == "queue_unavailable"

    def counted():
        rows = UsageCounter.objects.filter(scope="user", key=str(alice.pk), period="day")
        return list(rows.values_list("turns", flat=True))

    assert counted() in ([], [0])  # the turn that never ran is not counted ...
    model.reply("Hello.")
    assert api.post(URL.format(conv.pk), {"content": "hi"}, format="json").status_code == 201  # ... so it has room
    assert counted() == [1]
