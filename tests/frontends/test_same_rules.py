"""The frontends' endpoints post messages under the messages endpoint's rules: its throttle, usage limits, busy
conversations and background turns."""

import base64
import json
import uuid

import httpx2
import pytest
from django.test import override_settings

from toolcalling.models import Conversation, Message

AUTH = ("alice", "pw")
THROTTLED = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
    "DEFAULT_THROTTLE_RATES": {"toolcalling_turn": "1/minute"},
}


def chat_body(conversation, text, **extra):
    message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": str(conversation.pk), "messages": [message], "trigger": "submit-message", **extra}


def agui_body(conversation, text):
    return {
        "threadId": str(conversation.pk),
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": text}],
    }


def chunks(response):
    lines = [line.removeprefix("data: ") for line in response.text.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


@override_settings(REST_FRAMEWORK=THROTTLED)
def test_a_post_is_a_turn_for_the_throttle(live_server, model, conv, fresh_cache):
    base = f"{live_server.url}/api/toolcalling"
    model.reply("ok")
    with httpx2.Client(auth=AUTH, timeout=30) as client:
        assert client.post(f"{base}/ai-sdk/chat", json=chat_body(conv, "hi")).status_code == 200
        for refused in (client.post(f"{base}/ai-sdk/chat", json=chat_body(conv, "again")),
                        client.post(f"{base}/ag-ui/", json=agui_body(conv, "again"))):  # fmt: skip
            assert refused.status_code == 429 and refused.json()["code"] == "throttled"
            assert int(refused.headers["Retry-After"]) > 0
        assert client.get(f"{base}/ai-sdk/chat/{conv.pk}/stream").status_code == 204  # reading spends nothing
    assert Message.objects.filter(conversation=conv).count() == 2
    model.assert_done()


@pytest.mark.toolcalling(USAGE_LIMITS=[{"turns": 1, "per": "user", "period": "day"}])
def test_a_usage_limit_refuses_the_turn_before_anything_is_stored(live_server, model, conv):
    url = f"{live_server.url}/api/toolcalling/ai-sdk/chat"
    model.reply("The one answer of today.")
    with httpx2.Client(auth=AUTH, timeout=30) as client:
        assert client.post(url, json=chat_body(conv, "first")).status_code == 200
        refused = client.post(url, json=chat_body(conv, "second"))
    assert refused.status_code == 429 and refused.json()["code"] == "usage_limit_exceeded"
    assert "Retry-After" in refused.headers
    assert [m.content for m in Message.objects.filter(conversation=conv, role="user")] == ["first"]
    model.assert_done()


def test_a_busy_conversation_is_a_409_in_the_apps_shape(live_server, model, conv):
    Conversation.objects.filter(pk=conv.pk).update(status="running")
    with httpx2.Client(auth=AUTH, timeout=10) as client:
        busy = client.post(f"{live_server.url}/api/toolcalling/ai-sdk/chat", json=chat_body(conv, "hi"))
    assert busy.status_code == 409 and busy.json()["code"] == "conversation_busy"
    assert not Message.objects.filter(conversation=conv).exists()


def test_a_background_turn_is_followed_to_its_end(live_server, model, conv):
    # Eager Celery here: the turn has run when the response starts, and the stream replays it.
    model.reply("Answered in the background.")
    with httpx2.Client(auth=AUTH, timeout=30) as client:
        response = client.post(
            f"{live_server.url}/api/toolcalling/ai-sdk/chat", json=chat_body(conv, "hi", background=True)
        )
    assert response.status_code == 200 and response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    got = chunks(response)
    assert "".join(c["delta"] for c in got if c["type"] == "text-delta") == "Answered in the background."
    assert got[-1]["type"] == "finish" and got[-1]["messageMetadata"]["toolcalling"]["status"] == "idle"
    model.assert_done()


def test_a_message_is_checked_before_its_assistant_as_the_messages_endpoint_checks_it(api, alice):
    # The conversation's assistant is gone (a 409 once a turn is asked for), and the message is one no edge takes:
    # a background turn with a file. Every edge checks the message first, in the one way of posting.
    gone = Conversation.objects.create(user=alice, assistant_id="gone")
    rest = api.post(
        f"/api/toolcalling/conversations/{gone.pk}/messages/",
        {"content": "see", "background": True, "attachments": [str(uuid.uuid4())]},
        format="json",
    )
    png = {
        "type": "file",
        "mediaType": "image/png",
        "url": "data:image/png;base64," + base64.b64encode(b"png").decode(),
    }
    message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "see"}, png]}
    body = {"id": str(gone.pk), "messages": [message], "trigger": "submit-message", "background": True}
    chat = api.post("/api/toolcalling/ai-sdk/chat", body, format="json")
    assert rest.status_code == 400
    assert rest.json() == {"attachments": ["A message with attachments cannot run in the background."]}
    assert (chat.status_code, chat.json()) == (rest.status_code, rest.json())
    assert not Message.objects.filter(conversation=gone).exists()
