"""Streams of OpenAI-compatible servers that bend Chat Completions' streaming format, read through a whole turn."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from toolcalling.models import Conversation, ToolCall

from .conftest import answers_per_call, history_problems, post_turn


def ollama_chunk(delta: dict, finish_reason: str | None = None) -> str:
    """A chunk as Ollama's OpenAI-compatible endpoint sends it (the one quoted in ollama/ollama#7881)."""
    chunk = {"id": "chatcmpl-763", "object": "chat.completion.chunk", "created": 1732922184, "model": "qwen2.5:7b",
             "system_fingerprint": "fp_ollama",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}  # fmt: skip
    return "data: " + json.dumps(chunk) + "\n\n"


def whole_call(call_id: str, arguments: str) -> dict:
    call = {"id": call_id, "index": 0, "type": "function", "function": {"name": "add", "arguments": arguments}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


@pytest.mark.chat_completions
def test_parallel_calls_all_streamed_under_index_0_stay_separate_calls(transactional_db, alice, model):
    """Ollama 0.20 streams each of several parallel calls whole, in a chunk of its own, every one under index 0
    with an id of its own (ollama/ollama#15457, which its parsers fixed in fdfe9cec; qwen3-coder's again in
    #16212; NousResearch/hermes-agent#3468 saw it in the live stream). Read by index alone, the two calls were one
    call with the two argument objects run together, which no tool can take."""
    api = APIClient()
    api.force_authenticate(alice)
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    stream = (
        ollama_chunk(whole_call("call_rcja46yu", '{"a": 1, "b": 2}'))
        + ollama_chunk(whole_call("call_x3k0tq1m", '{"a": 3, "b": 4}'))
        + ollama_chunk({"role": "assistant", "content": ""}, "tool_calls")
        + "data: [DONE]\n\n"
    )
    model.raw(stream, content_type="text/event-stream")
    model.reply("3 and 7.")

    status, _ = post_turn(api, conversation.pk, "Add 1 and 2, and 3 and 4.", "stream")

    conversation.refresh_from_db()
    assert status == 200 and conversation.status == "idle", conversation.error
    calls = list(ToolCall.objects.filter(conversation=conversation).order_by("index"))
    assert [(c.call_id, c.arguments, c.result) for c in calls] == [
        ("call_rcja46yu", {"a": 1, "b": 2}, "3"),
        ("call_x3k0tq1m", {"a": 3, "b": 4}, "7"),
    ]
    assert answers_per_call(conversation.pk) == {"call_rcja46yu": 1, "call_x3k0tq1m": 1}
    assert history_problems(conversation.pk) == []
    model.assert_done()
