"""Anthropic's Messages API through the real SDK against the strict server: the request's shape (system, tools,
tool results in the next user message, cache points), thinking blocks kept and sent back, structured output,
usage with cache reads, switches between APIs mid-conversation, malformed replies and the missing SDK."""

import json
import sys

import anthropic
import pydantic
import pytest
from django.core.exceptions import ImproperlyConfigured

from toolcalling import Assistant
from toolcalling.exceptions import ModelError
from toolcalling.hooks import ModelRequest
from toolcalling.model_apis import Responses, UserMessage, get_model_api, reasoning_items
from toolcalling.models import Message
from toolcalling.testutils import override_toolcalling
from toolcalling.toolkit._tool import make_tool

from .assistants import Verdict

ANTHROPIC = pytest.mark.toolcalling(API="anthropic", MODEL="claude-sonnet-4-5")
THINKING = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
POINT = {"type": "ephemeral"}
GOOD = json.dumps({"answer": "yes", "confidence": 0.9})


def post(api, conversation_id, content):
    return api.post(f"/api/toolcalling/conversations/{conversation_id}/messages/", {"content": content}, format="json")


def blocks(request, role, kind):
    return [b for m in request["messages"] if m["role"] == role for b in m["content"] if b.get("type") == kind]


@ANTHROPIC
def test_the_request_has_system_tools_and_results_in_the_next_user_message_with_cache_points(strict_model, alice):
    strict_model.calls(("add", {"a": 2, "b": 3}), ("explode", {}))
    strict_model.reply("5, and the other one broke.")
    Assistant.get("helper").run(alice, "2 + 3, and explode?")

    first, second = strict_model.requests
    for request in (first, second):
        assert request["system"] == [{"type": "text", "text": "You are a test helper.", "cache_control": POINT}]
        assert request["max_tokens"] == 4096  # required by the API; the app's default
        assert all("input_schema" in tool and "parameters" not in tool for tool in request["tools"])
        assert request["tools"][-1]["cache_control"] == POINT
        assert [t.get("cache_control") for t in request["tools"][:-1]] == [None] * (len(request["tools"]) - 1)
        assert request["messages"][-1]["content"][-1]["cache_control"] == POINT  # the history so far
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    uses = blocks(second, "assistant", "tool_use")
    assert [(u["name"], u["input"]) for u in uses] == [("add", {"a": 2, "b": 3}), ("explode", {})]
    results = second["messages"][2]["content"]
    assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]  # one user message, in order
    assert results[0]["content"] == "5" and "is_error" not in results[0]
    assert results[1]["is_error"] is True and results[1]["content"] == "Error: RuntimeError: boom"


@ANTHROPIC
def test_every_tool_use_goes_back_after_the_thinking_block_it_came_with(strict_model, alice):
    strict_model.call("add", {"a": 1, "b": 2})
    strict_model.call("add", {"a": 3, "b": 3})
    strict_model.reply("Done.")
    result = Assistant.get("lf_anthropic").run(alice, "Sums?")

    answers = [m for m in result.messages if m.role == "assistant"]
    assert [[item["type"] for item in reasoning_items(m.provider_items)] for m in answers] == [["thinking"]] * 3
    thoughts = [reasoning_items(m.provider_items)[0] for m in answers]
    assert all(thought["signature"] and thought["thinking"] for thought in thoughts)
    third = strict_model.requests[2]
    sent = [m["content"] for m in third["messages"] if m["role"] == "assistant"]
    assert [[b["type"] for b in content] for content in sent] == [["thinking", "tool_use"]] * 2
    assert [content[0] for content in sent] == thoughts[:2]  # unchanged
    assert third["thinking"] == THINKING["thinking"] and third["max_tokens"] == 2048  # model_options pass through
    assert answers[-1].content == "Done."


@ANTHROPIC
def test_usage_counts_cache_reads_in_the_prompt_and_as_cached_tokens(strict_model, api, conversation):
    strict_model.call("add", {"a": 1, "b": 2})
    strict_model.reply("3")
    response = post(api, conversation["id"], "1 + 2?")
    assert response.status_code == 201, response.content

    first, second = (m for m in response.json()["messages"] if m["role"] == "assistant")
    assert first["cached_tokens"] == 0  # nothing was sent before
    assert second["cached_tokens"] > 0  # the tools, the system prompt and the first request's history again
    assert second["cached_tokens"] < second["prompt_tokens"]  # the input includes the cache reads
    conv = api.get(f"/api/toolcalling/conversations/{conversation['id']}/").json()
    assert conv["cached_tokens"] == first["cached_tokens"] + second["cached_tokens"]
    assert conv["prompt_tokens"] == first["prompt_tokens"] + second["prompt_tokens"]


@ANTHROPIC
def test_scripted_usage_reads_as_the_api_counts_it(strict_model, alice):
    strict_model.reply("Counted.", usage={"prompt_tokens": 900, "completion_tokens": 70, "cached_tokens": 512})
    answer = Assistant.get("helper").run(alice, "Count").messages[-1]
    assert (answer.prompt_tokens, answer.completion_tokens, answer.cached_tokens) == (900, 70, 512)


def test_structured_output_goes_as_output_config_format_and_an_invalid_answer_is_retried(strict_model, alice):
    strict_model.reply('{"answer": "yes"}')
    strict_model.reply(GOOD)
    result = Assistant.get("lf_anthropic_structured").run(alice, "Is it?")

    assert result.output == Verdict(answer="yes", confidence=0.9)
    fmt = strict_model.requests[0]["output_config"]["format"]
    assert fmt == {"type": "json_schema", "schema": anthropic.transform_schema(Verdict.model_json_schema())}
    assert fmt["schema"]["additionalProperties"] is False  # the API refuses an object schema left open
    retry = strict_model.messages(1)
    assert retry[-2] == {"role": "assistant", "content": '{"answer": "yes"}'}
    assert "confidence: Field required" in retry[-1]["content"]


@pytest.mark.chat_completions  # its assistants choose their APIs; the site's MODEL_OPTIONS hold no thinking
def test_a_conversation_moves_between_responses_and_anthropic_each_keeping_its_own_items(
    strict_model, api, conversation
):
    with override_toolcalling(API="responses", MODEL="gpt-5-mini"):
        strict_model.call("add", {"a": 2, "b": 2})
        strict_model.reply("4")
        assert post(api, conversation["id"], "2 + 2?").status_code == 201
    with override_toolcalling(API="anthropic", MODEL="claude-sonnet-4-5", MODEL_OPTIONS=THINKING):
        strict_model.call("add", {"a": 4, "b": 4})
        strict_model.reply("8")
        response = post(api, conversation["id"], "Double it.")
        assert response.status_code == 201, response.content
    anthropic_request = strict_model.requests[-1]
    sent = [[b["type"] for b in m["content"]] for m in anthropic_request["messages"] if m["role"] == "assistant"]
    # The Responses answers' reasoning items stay out; the new call keeps the thinking block it came with.
    assert sent == [["tool_use"], ["text"], ["thinking", "tool_use"]]
    with override_toolcalling(API="responses", MODEL="gpt-5-mini"):
        strict_model.reply("Back.")
        assert post(api, conversation["id"], "And now?").status_code == 201
    kinds = [item.get("type") for item in strict_model.requests[-1]["input"]]
    assert kinds.count("reasoning") == 2  # only the Responses answers', never a thinking block
    stored = Message.objects.filter(conversation_id=conversation["id"], role="assistant").order_by("id")
    assert [[item["type"] for item in reasoning_items(m.provider_items)] for m in stored] == [
        ["reasoning"], ["reasoning"], ["thinking"], ["thinking"], ["reasoning"],
    ]  # fmt: skip


@ANTHROPIC
@pytest.mark.parametrize(
    "body",
    [
        '{"type": "message", "content": "not a list"}',
        '{"type": "message", "content": [{"type": "tool_use", "id": "t1", "input": {}}]}',
        '{"type": "message", "content": [{"type": "tool_use", "id": "t1", "name": "add", "input": "{}"}]}',
        '{"type": "message", "content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "x"}]}',
        '{"type": "message", "content": [], "stop_reason": "end_turn"}',
        '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
        # each count in range, their sum past what a message's token columns hold
        '{"type": "message", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "x"}],'
        ' "stop_reason": "end_turn", "usage": {"input_tokens": 1000000000, "cache_read_input_tokens": 1000000000,'
        ' "cache_creation_input_tokens": 1000000000, "output_tokens": 5}}',
        "not json",
    ],
)
def test_a_malformed_message_is_a_model_error_and_nothing_of_it_is_stored(model, api, conversation, body):
    model.raw(body)
    response = post(api, conversation["id"], "hi")
    assert response.status_code == 502
    assert response.json()["code"] == "model_error"
    assert list(Message.objects.filter(conversation_id=conversation["id"]).values_list("role", flat=True)) == ["user"]


@ANTHROPIC
def test_a_stream_that_never_stops_is_a_model_error_after_its_text_went_out(model):
    message = {"type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "usage": {}}
    events = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hal"}},
    ]
    model.raw("".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events),
              content_type="text/event-stream")  # fmt: skip
    deltas: list[str] = []
    request = ModelRequest(model="claude-sonnet-4-5", messages=[UserMessage("hi")], tools=[])
    with pytest.raises(ModelError, match="the stream ended before the message stopped"):
        get_model_api().send(request, on_delta=deltas.append)
    assert deltas == ["Hal"]


@pytest.mark.toolcalling(API="anthropic")
def test_without_the_sdk_the_api_is_improperly_configured_naming_the_extra(model, monkeypatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)  # what a site without the extra has
    for name in [name for name in sys.modules if name.startswith("toolcalling.model_apis.anthropic")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImproperlyConfigured, match=r"pip install django-toolcalling\[anthropic\]"):
        get_model_api()
    assert type(get_model_api(Assistant.get("lf_responses"))) is Responses  # the others still work


@ANTHROPIC
def test_a_redacted_thinking_block_is_stored_and_sent_back_first_as_it_came(strict_model, alice):
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}
    use = {"type": "tool_use", "id": "toolu_01", "name": "add", "input": {"a": 1, "b": 2}}
    message = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
               "content": [redacted, use], "stop_reason": "tool_use",
               "usage": {"input_tokens": 9, "output_tokens": 5}}  # fmt: skip
    strict_model.raw(json.dumps(message))
    strict_model.reply("3")
    result = Assistant.get("helper").run(alice, "1 + 2?")
    assert reasoning_items(result.messages[1].provider_items) == [redacted]
    sent = next(m for m in strict_model.requests[-1]["messages"] if m["role"] == "assistant")
    assert sent["content"] == [redacted, use]
    assert result.reply == "3"


@ANTHROPIC
def test_interleaved_thinking_goes_back_in_the_order_the_answer_had_it(strict_model, alice):
    strict_model.call("add", {"a": 1, "b": 2}, content="Adding.").interleaved = True
    strict_model.reply("3")
    result = Assistant.get("lf_anthropic").run(alice, "1 + 2?")

    answer = result.messages[1]
    assert [item["type"] for item in answer.provider_items] == ["thinking", "text", "thinking", "tool_use"]
    sent = next(m for m in strict_model.requests[-1]["messages"] if m["role"] == "assistant")["content"]
    assert [block["type"] for block in sent] == ["thinking", "text", "thinking", "tool_use"]
    assert [sent[0], sent[2]] == reasoning_items(answer.provider_items)  # unchanged, where they came
    assert result.reply == "3" and not strict_model.rejected


def say(text: str) -> str:
    """Say it back."""
    return text


class Sayer(Assistant):
    id = "lf_anthropic_sayer"
    tools = [make_tool(say), "explode"]
    api = "anthropic"
    model = "claude-sonnet-4-5"


def test_a_failed_call_is_an_error_result_and_a_result_that_reads_like_one_is_not(strict_model, alice):
    strict_model.calls(("explode", {}), ("say", {"text": "Error: none, all fine"}))
    strict_model.reply("Told.")
    Assistant.get("lf_anthropic_sayer").run(alice, "Go.")
    results = blocks(strict_model.requests[-1], "user", "tool_result")
    assert [(block["content"].startswith("Error: "), block.get("is_error", False)) for block in results] == [
        (True, True),  # the tool raised
        (True, False),  # the tool succeeded, with text that starts like an error
    ]
    stored = Message.objects.filter(role="tool").order_by("id")
    assert [message.is_error for message in stored] == [True, False]


@pytest.mark.toolcalling(API="anthropic", MODEL="claude-sonnet-4-5", MODEL_OPTIONS=THINKING)
def test_an_answer_of_another_model_goes_back_with_its_thinking_blocks(strict_model, alice):
    """Unlike a Responses reasoning item, a thinking block is not refused by another Claude model: the API reads it,
    or drops it unbilled before the model sees it (platform.claude.com, "What's new in Claude Opus 5.5", "Thinking
    blocks are tied to the model and the conversation"), and a client that strips blocks itself risks the ordering
    and signature 400s. After an assistant's model changed, its earlier answers go back as they were issued."""
    strict_model.call("add", {"a": 2, "b": 3})
    strict_model.reply("5")
    first = Assistant.get("helper").run(alice, "2 + 3?")
    issued = [reasoning_items(m.provider_items) for m in first.messages if m.role == "assistant"]
    with override_toolcalling(API="anthropic", MODEL="claude-haiku-4-5", MODEL_OPTIONS=THINKING):
        strict_model.call("add", {"a": 5, "b": 5})
        strict_model.reply("10")
        second = Assistant.get("helper").run(alice, "Double it.", conversation=first.conversation)
    assert second.reply == "10" and not strict_model.rejected
    after_switch = strict_model.requests[2]
    assert after_switch["model"] == "claude-haiku-4-5"
    sent = [m["content"] for m in after_switch["messages"] if m["role"] == "assistant"]
    kinds = [[block["type"] for block in content] for content in sent]
    assert kinds == [["thinking", "tool_use"], ["thinking", "text"]]
    assert [content[0] for content in sent] == [items[0] for items in issued]  # unchanged


class Metadata(pydantic.BaseModel):
    user_id: str


@pytest.mark.parametrize(
    "metadata",
    [{"user_id": "site-user-7"}, Metadata(user_id="site-user-7")],
    ids=["plain JSON, sent as the app encodes it", "a value only the SDK encodes, left to the SDK"],
)
@ANTHROPIC
def test_the_body_reaches_the_api_whole_whoever_encodes_it(strict_model, alice, metadata):
    # The app hands the SDK the body's JSON text, so the SDK does not copy the whole history on every request; a
    # body JSON cannot encode as it is (a pydantic model in MODEL_OPTIONS) still goes, encoded by the SDK.
    strict_model.calls(("add", {"a": 2, "b": 3}))
    strict_model.reply("5")
    with override_toolcalling(MODEL_OPTIONS={"metadata": metadata, "temperature": 0.5}):
        result = Assistant.get("helper").run(alice, "2 + 3?")
    assert result.reply == "5"
    for request in strict_model.requests:
        assert request["metadata"] == {"user_id": "site-user-7"} and request["temperature"] == 0.5
    assert blocks(strict_model.requests[1], "user", "tool_result")[0]["content"] == "5"
