"""The event store down (``EVENTS_REDIS_URL`` on a closed port): turns run and answer in every mode, a streamed
turn streams from this process, ``GET .../events/`` is a 503 with a code, and no conversation stays busy."""

import json
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import override_settings

from tests import services
from toolcalling import streaming as events
from toolcalling.models import Conversation, Message
from toolcalling.streaming._redis import RedisBackend

pytestmark = pytest.mark.django_db(transaction=True)  # a streamed turn runs in a thread of its own

URL = "/api/toolcalling/conversations/{}/"


@pytest.fixture
def events_down(model) -> Iterator[str]:
    """Events go to a Redis that is not there: a port nothing listens on."""
    url = f"redis://127.0.0.1:{services.free_port()}/0"
    with override_settings(TOOLCALLING={**settings.TOOLCALLING, "EVENTS_REDIS_URL": url}):
        assert isinstance(events.get_backend(), RedisBackend)
        yield url


def streamed(api, conversation_id, content):
    body = json.dumps({"content": content})
    url = URL.format(conversation_id) + "messages/"
    response = api.generic("POST", url, body, content_type="application/json", HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 200 and response.streaming
    text = b"".join(response.streaming_content).decode()
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def test_a_streamed_turn_streams_from_this_process(api, conversation, model, events_down):
    model.reply("Still here, though the event stream is not.")
    received = streamed(api, conversation["id"], "hello?")
    assert received[-1]["type"] == "turn_end" and received[-1]["status"] == "idle"
    text = "".join(e["content"] for e in received if e["type"] == "delta")
    stored = Message.objects.filter(conversation_id=conversation["id"], role="assistant").get()
    assert text == stored.content == "Still here, though the event stream is not."
    assert Conversation.objects.get(pk=conversation["id"]).status == "idle"
    model.reply("And again.")
    assert streamed(api, conversation["id"], "once more")[-1]["type"] == "turn_end"  # nothing stayed busy


def test_json_and_background_turns_answer_and_the_events_endpoint_is_a_503(api, conversation, model, events_down):
    model.reply("Answered as JSON.")
    url = URL.format(conversation["id"])
    answer = api.post(url + "messages/", {"content": "hi"}, format="json")
    assert answer.status_code == 201 and answer.json()["messages"][-1]["content"] == "Answered as JSON."
    model.reply("Answered in the background.")
    background = api.post(url + "messages/", {"content": "later", "background": True}, format="json")
    assert background.status_code == 202 and background.json()["status"] == "idle"  # eager Celery ran it
    refused = api.get(url + "events/", HTTP_ACCEPT="text/event-stream")
    assert refused.status_code == 503
    assert refused.json()["code"] == "events_unavailable" and refused.json()["status"] is None
    assert Conversation.objects.get(pk=conversation["id"]).status == "idle"
    assert Message.objects.filter(conversation_id=conversation["id"]).count() == 4
