"""A fault matrix: every malformed model reply, in a plain, a streamed and a background turn, ends as a
``model_error`` with nothing of it stored and the history valid; the next normal turn then succeeds."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from toolcalling.models import Conversation, Message, ToolCall

from .conftest import answers_per_call, history_problems, post_turn

MODES = ["json", "stream", "background"]


def completion(message: object, **extra: object) -> str:
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return json.dumps({"id": "x", "object": "chat.completion", "model": "m", "choices": [choice], **extra})


def chunk(choices: list) -> str:
    return "data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "model": "m", "choices": choices})


# Each fault: what the endpoint sends back, as (body, content type), for a plain and for a streamed request.
FAULTS = {
    "message is null": (completion(None), "application/json"),
    "body is not JSON": ("oops, not json", "application/json"),
    "an HTML page": ("<html><body>502 Bad Gateway</body></html>", "text/html"),
    "no choices": (json.dumps({"id": "x", "object": "chat.completion", "choices": []}), "application/json"),
    "a call without a name": (
        completion(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": None, "arguments": "{}"}}],
            }
        ),
        "application/json",
    ),
    "neither text nor calls": (completion({"role": "assistant", "content": None}), "application/json"),
    "an error object with status 200": (json.dumps({"error": {"message": "overloaded"}}), "application/json"),
}
STREAM_FAULTS = {
    "an empty stream": ("", "text/event-stream"),
    "an HTML page": ("<html><body>502 Bad Gateway</body></html>", "text/html; charset=utf-8"),
    "empty choices only": (chunk([]) + "\n\ndata: [DONE]\n\n", "text/event-stream"),
    "message: null chunks": (chunk([{"index": 0, "message": None}]) + "\n\ndata: [DONE]\n\n", "text/event-stream"),
    "a chunk that is not JSON": ("data: {oops\n\n", "text/event-stream"),
    "neither text nor calls, but a finish reason": (  # content: null is judged as in a completion
        chunk([{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": "stop"}])
        + "\n\ndata: [DONE]\n\n",
        "text/event-stream",
    ),
    "a streamed call without a name": (
        chunk([{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"arguments": "{}"}}]},
                "finish_reason": "tool_calls"}]) + "\n\ndata: [DONE]\n\n",
        "text/event-stream",
    ),
}  # fmt: skip

CASES = [(mode, name) for mode in MODES for name in (STREAM_FAULTS if mode != "json" else FAULTS)]


@pytest.mark.parametrize("mode,fault", CASES, ids=[f"{m}:{f}" for m, f in CASES])
def test_a_malformed_reply_is_a_model_error_and_the_next_turn_succeeds(transactional_db, alice, model, mode, fault):
    api = APIClient()
    api.force_authenticate(alice)
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    body, content_type = (STREAM_FAULTS if mode != "json" else FAULTS)[fault]
    model.raw(body, content_type=content_type)

    status, answer = post_turn(api, conversation.pk, "Hello?", mode)

    conversation.refresh_from_db()
    assert conversation.status == "failed"
    assert "not a valid completion" in conversation.error or "answered with an error" in conversation.error
    if mode == "json":
        assert status == 502 and answer["code"] == "model_error" and answer["status"] == "failed"
    elif mode == "stream":
        assert status == 200
        assert [e["type"] for e in answer][-2:] == ["error", "turn_end"] and answer[-1]["status"] == "failed"
    else:
        assert status == 202
    # Nothing of the bad reply was stored: only the user's message.
    assert list(Message.objects.filter(conversation=conversation).values_list("role", flat=True)) == ["user"]
    assert history_problems(conversation.pk) == []

    model.call("add", {"a": 2, "b": 3})
    model.reply("Five.")
    status, answer = post_turn(api, conversation.pk, "And now?", mode)
    conversation.refresh_from_db()
    assert conversation.status == "idle", conversation.error
    assert Message.objects.filter(conversation=conversation).last().content == "Five."
    assert history_problems(conversation.pk) == []
    model.assert_done()


@pytest.mark.chat_completions
@pytest.mark.parametrize("mode", MODES)
def test_replies_a_strict_api_would_refuse_to_get_back_are_stored_safely(transactional_db, alice, model, mode):
    """Missing and repeated call ids, lone surrogates and NUL characters: stored so the history stays valid."""
    api = APIClient()
    api.force_authenticate(alice)
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    broken = completion(
        {
            "role": "assistant",
            "content": "Let me add \ud800 that\u0000.",
            "tool_calls": [
                {"type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},  # no id
                {"id": "dup", "type": "function", "function": {"name": "add", "arguments": '{"a": 3, "b": 4}'}},
                {"id": "dup", "type": "function", "function": {"name": "whoami", "arguments": "{}"}},
                {"id": "x" * 300, "type": "function", "function": {"name": "add", "arguments": '{"a": 5, "b": 6}'}},
                {"id": "s", "type": "function", "function": {"name": "ship", "arguments": '{"order_no": "A\\ud800"}'}},
            ],
        }
    )
    if mode == "json":
        model.raw(broken)
    else:  # the same answer, streamed by the scripted model
        from toolcalling.testing import Reply
        from toolcalling.testing import ToolCall as ScriptedCall

        model.queue(
            Reply(
                content="Let me add \ud800 that\u0000.",
                tool_calls=[
                    ScriptedCall(name="add", arguments='{"a": 1, "b": 2}', id=""),
                    ScriptedCall(name="add", arguments='{"a": 3, "b": 4}', id="dup"),
                    ScriptedCall(name="whoami", arguments="{}", id="dup"),
                    ScriptedCall(name="add", arguments='{"a": 5, "b": 6}', id="x" * 300),
                    ScriptedCall(name="ship", arguments='{"order_no": "A\\ud800"}', id="s"),
                ],
            )
        )
    model.reply("Done \udfff.")
    status, _ = post_turn(api, conversation.pk, "Add things please", mode)

    conversation.refresh_from_db()
    assert conversation.status == "idle", conversation.error
    calls = list(ToolCall.objects.filter(conversation=conversation).order_by("index"))
    assert [c.status for c in calls] == ["succeeded"] * 5
    ids = [c.call_id for c in calls]
    assert len(set(ids)) == 5 and all(0 < len(i) <= 64 for i in ids) and ids[1] == "dup"
    # The tool ran with the lone surrogate and its result was stored, made storable.
    assert json.loads(calls[4].result)["order_no"] == "A\ufffd"
    assert answers_per_call(conversation.pk) == dict.fromkeys(ids, 1)
    texts = list(Message.objects.filter(conversation=conversation).values_list("content", flat=True))
    assert texts[0] == "Add things please"
    assert texts[1] == "Let me add \ufffd that\ufffd."
    assert texts[-1] == "Done \ufffd."
    assert history_problems(conversation.pk) == []
    # The model was sent the stored (renamed) ids, each answered right after its call.
    sent = model.messages(-1)
    assert [c["id"] for c in sent[-6]["tool_calls"]] == ids
    model.assert_done()


def test_a_lone_surrogate_from_the_user_is_a_clear_400(api, conversation, model):
    response = api.generic(
        "POST",
        f"/api/toolcalling/conversations/{conversation['id']}/messages/",
        '{"content": "a \\ud83d b"}',
        content_type="application/json",
    )
    assert response.status_code == 400 and "Surrogate characters are not allowed" in response.json()["content"][0]
    assert not Message.objects.exists()
