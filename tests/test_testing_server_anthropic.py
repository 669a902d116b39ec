"""The strict server's ``/v1/messages``, driven through the real anthropic SDK's ``client.messages``: the shapes it
answers in, and the real API's rules it refuses requests by (each with the API's own error text)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from toolcalling.testing import OpenAICompatibleServer, ScriptedModel

MODEL = "claude-sonnet-4-5"
WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
THINKING: dict[str, Any] = {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048}
ASK = {"role": "user", "content": "Weather in Paris?"}
POINT = {"type": "ephemeral"}


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def client(model: ScriptedModel) -> Iterator[anthropic.Anthropic]:
    with OpenAICompatibleServer(model) as server:
        yield anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)


def replay(message: Any) -> list[dict[str, Any]]:
    """A message's content blocks as the next request's assistant content, as a client sends them back."""
    return [block.model_dump(exclude_none=True) for block in message.content]


def answer(call_id: str, text: str = '{"temp_c": 21}') -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}]}


def refused(client: anthropic.Anthropic, **body: Any) -> str:
    body.setdefault("model", MODEL)
    body.setdefault("max_tokens", 1024)
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(**body)
    error = caught.value.body["error"]  # type: ignore[index]
    assert error["type"] == "invalid_request_error"
    return error["message"]


def test_a_thinking_model_answers_with_a_signed_thinking_block_then_its_tool_use_and_takes_it_back(model, client):
    model.call("get_weather", {"city": "Paris"})
    model.reply("21°C.")
    first = client.messages.create(model=MODEL, messages=[ASK], tools=[WEATHER], **THINKING)
    assert [block.type for block in first.content] == ["thinking", "tool_use"]
    thinking, call = first.content
    assert thinking.signature and thinking.thinking
    assert (call.name, call.input, call.id) == ("get_weather", {"city": "Paris"}, "call_1")
    assert first.stop_reason == "tool_use"
    assert first.usage.output_tokens_details.thinking_tokens > 0

    second = client.messages.create(model=MODEL, messages=[ASK, {"role": "assistant", "content": replay(first)},
                                                           answer(call.id)], tools=[WEATHER], **THINKING)  # fmt: skip
    assert [block.type for block in second.content] == ["thinking", "text"]
    assert second.content[1].text == "21°C." and second.stop_reason == "end_turn"
    assert not model.rejected


def test_a_tool_use_continuation_without_its_thinking_block_or_with_a_changed_one_is_refused(model, client):
    model.call("get_weather", {"city": "Paris"})
    first = client.messages.create(model=MODEL, messages=[ASK], tools=[WEATHER], **THINKING)
    thinking, call = replay(first)
    without = refused(client, messages=[ASK, {"role": "assistant", "content": [call]}, answer(call["id"])],
                      tools=[WEATHER], **THINKING)  # fmt: skip
    assert without.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."
    )
    changed = {**thinking, "thinking": thinking["thinking"] + " (edited)"}
    edited = refused(client, messages=[ASK, {"role": "assistant", "content": [changed, call]}, answer(call["id"])],
                     tools=[WEATHER], **THINKING)  # fmt: skip
    assert edited == "messages.1.content.0: Invalid `signature` in `thinking` block"
    # Without thinking on, the same continuation needs no thinking block.
    model.reply("21°C.")
    plain = [ASK, {"role": "assistant", "content": [call]}, answer(call["id"])]
    assert (
        client.messages.create(model=MODEL, max_tokens=1024, messages=plain, tools=[WEATHER]).content[0].text == "21°C."
    )


def test_tool_results_must_answer_the_tool_uses_just_before_and_every_tool_use_is_answered(client):
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
    stray = refused(client, messages=[ASK, {"role": "assistant", "content": "Let me see."}, answer("toolu_1")])
    assert stray.startswith("messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1.")
    unanswered = refused(client, messages=[ASK, {"role": "assistant", "content": [use]},
                                           {"role": "user", "content": "Well?"}], tools=[WEATHER])  # fmt: skip
    assert unanswered.startswith(
        "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1."
    )
    late = {"role": "user", "content": [{"type": "text", "text": "Here:"}, answer("toolu_1")["content"][0]]}
    after_text = refused(client, messages=[ASK, {"role": "assistant", "content": [use]}, late], tools=[WEATHER])
    assert "`tool_result` blocks must come before any other content" in after_text


def test_turns_of_one_role_in_a_row_are_combined_and_max_tokens_is_required(model, client):
    # "Consecutive `user` or `assistant` turns in your request will be combined into a single turn" (the SDK's
    # documentation of ``messages``): two user turns are taken, and checked as one.
    model.reply("Hello.")
    taken = client.messages.create(model=MODEL, max_tokens=1024, messages=[ASK, {"role": "user", "content": "Hi?"}])
    assert taken.content[0].text == "Hello."  # type: ignore[union-attr]
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
    turns = [ASK, {"role": "assistant", "content": [use]}, {"role": "user", "content": "Here:"}, answer("toolu_1")]
    text_then_result = refused(client, tools=[WEATHER], messages=turns)
    assert "`tool_result` blocks must come before any other content" in text_then_result
    with OpenAICompatibleServer(ScriptedModel()) as server:
        raw = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        with pytest.raises(anthropic.BadRequestError) as caught:
            raw.post("/v1/messages", body={"model": MODEL, "messages": [ASK]}, cast_to=dict)
    assert caught.value.body["error"]["message"] == "max_tokens: Field required"  # type: ignore[index]


def test_unknown_keys_are_refused_at_every_level(client):
    assert refused(client, messages=[ASK], extra_body={"response_format": {}}) == (
        "response_format: Extra inputs are not permitted"
    )
    tool = {**WEATHER, "parameters": {}}
    assert "tools.0.parameters: Extra inputs are not permitted" in refused(client, messages=[ASK], tools=[tool])
    block = {"role": "user", "content": [{"type": "text", "text": "Hi", "name": "x"}]}
    assert refused(client, messages=[block]) == "messages.0.content.0.text.name: Extra inputs are not permitted"


def test_thinking_refuses_a_forced_tool_and_a_budget_beyond_max_tokens(client):
    forced = refused(client, messages=[ASK], tools=[WEATHER], tool_choice={"type": "any"}, **THINKING)
    assert forced == "Thinking may not be enabled when tool_choice forces tool use."
    budget = refused(client, messages=[ASK], max_tokens=1024, thinking={"type": "enabled", "budget_tokens": 1024})
    assert budget == "`max_tokens` must be greater than `thinking.budget_tokens`."


def test_a_repeated_prefix_marked_with_cache_control_is_read_from_the_cache(model, client):
    system = [{"type": "text", "text": "You are a weather service. " * 20, "cache_control": POINT}]
    tools = [{**WEATHER, "cache_control": POINT}]
    model.reply("Sunny.")
    model.reply("Still sunny.")
    model.reply("Unmarked.")
    first = client.messages.create(model=MODEL, max_tokens=1024, system=system, tools=tools, messages=[ASK])
    assert first.usage.cache_read_input_tokens == 0 and first.usage.cache_creation_input_tokens > 0
    again = [ASK, {"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "And tomorrow?"}]
    second = client.messages.create(model=MODEL, max_tokens=1024, system=system, tools=tools, messages=again)
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    unmarked = [{"type": "text", "text": system[0]["text"]}]
    third = client.messages.create(model=MODEL, max_tokens=1024, system=unmarked, tools=[WEATHER], messages=[ASK])
    assert third.usage.cache_read_input_tokens == 0 and third.usage.cache_creation_input_tokens == 0


def test_a_stream_sends_thinking_text_and_input_json_deltas_between_start_and_stop(model, client):
    model.call("get_weather", {"city": "Paris"}, content="Checking.")
    with client.messages.stream(model=MODEL, messages=[ASK], tools=[WEATHER], **THINKING) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert {"thinking", "signature", "text", "input_json"} <= set(kinds)
    assert [block.type for block in final.content] == ["thinking", "text", "tool_use"]
    assert final.content[2].input == {"city": "Paris"} and final.content[1].text == "Checking."
    assert final.content[0].signature


def test_structured_output_is_checked_as_output_config_format(model, client):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
              "additionalProperties": False}  # fmt: skip
    model.reply(json.dumps({"city": "Paris"}))
    fine = client.messages.create(model=MODEL, max_tokens=1024, messages=[ASK],
                                  output_config={"format": {"type": "json_schema", "schema": schema}})  # fmt: skip
    assert json.loads(fine.content[0].text) == {"city": "Paris"}
    wrong = refused(client, messages=[ASK], output_config={"format": {"type": "json_object"}})
    assert wrong == "output_config.format.type: Input should be 'json_schema'"
    # Every object closed, nested ones too (as the SDK's transform_schema makes them).
    open_root = {key: value for key, value in schema.items() if key != "additionalProperties"}
    message = refused(client, messages=[ASK], output_config={"format": {"type": "json_schema", "schema": open_root}})
    assert message == (
        "output_config.format.schema: For 'object' type, 'additionalProperties' must be explicitly set to false"
    )
    nested = {**schema, "properties": {"where": {"type": "object", "properties": {}, "additionalProperties": True}}}
    message = refused(client, messages=[ASK], output_config={"format": {"type": "json_schema", "schema": nested}})
    assert message == (
        "output_config.format.schema: For 'object' type, 'additionalProperties: true' is not supported. Please set "
        "'additionalProperties' to false"
    )


def test_an_error_reply_has_the_apis_error_shape(model, client):
    model.error(529, "Overloaded")
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model=MODEL, max_tokens=1024, messages=[ASK])
    assert caught.value.status_code == 529
    assert caught.value.body["type"] == "error"  # type: ignore[index]
    assert caught.value.body["error"] == {"type": "overloaded_error", "message": "Overloaded"}  # type: ignore[index]


def test_the_offline_model_answers_the_anthropic_api_too():
    from toolcalling.contrib.offline import anthropic_client

    offline = anthropic_client()
    order = {"name": "get_order_status", "description": "Look up the shipping status of an order.",
             "input_schema": {"type": "object", "properties": {"order_no": {"type": "string",
             "description": "Order number, e.g. 20250719-0032"}}}}  # fmt: skip
    question = {"role": "user", "content": "Where is my order 20250719-0032?"}
    first = offline.messages.create(model="offline", max_tokens=1024, messages=[question], tools=[WEATHER, order])
    [call] = first.content
    assert (call.type, call.name, call.input) == ("tool_use", "get_order_status", {"order_no": "20250719-0032"})
    messages = [question, {"role": "assistant", "content": replay(first)}, answer(call.id, '{"status": "shipped"}')]
    second = offline.messages.create(model="offline", max_tokens=1024, messages=messages, tools=[WEATHER, order])
    assert "shipped" in second.content[0].text


def test_interleaved_thinking_goes_back_where_it_came_and_a_moved_block_is_refused(model, client):
    model.call("get_weather", {"city": "Paris"}, content="Let me look.").interleaved = True
    model.reply("21°C.")
    first = client.messages.create(model=MODEL, messages=[ASK], tools=[WEATHER], **THINKING)
    assert [block.type for block in first.content] == ["thinking", "text", "thinking", "tool_use"]
    thinking, text, later, call = replay(first)
    moved = [thinking, later, text, call]  # all thinking first, as a reader that sorts blocks by kind sends them
    message = refused(client, messages=[ASK, {"role": "assistant", "content": moved}, answer(call["id"])],
                      tools=[WEATHER], **THINKING)  # fmt: skip
    assert message == (
        "messages.1.content.1: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be "
        "modified. These blocks must remain as they were in the original response."
    )
    kept = [ASK, {"role": "assistant", "content": replay(first)}, answer(call["id"])]
    second = client.messages.create(model=MODEL, messages=kept, tools=[WEATHER], **THINKING)
    assert second.content[-1].text == "21°C."
    assert len(model.rejected) == 1


def test_a_thinking_block_of_another_model_is_taken_as_the_api_takes_it(model, client):
    """A thinking block goes to another model and the request is answered, not refused: the API reads it, or drops
    it unbilled before the model sees it (platform.claude.com, "What's new in Claude Opus 5.5", "Thinking blocks
    are tied to the model and the conversation"). Only a block the API never issued is refused, whatever the model."""
    model.call("get_weather", {"city": "Paris"})
    model.reply("21°C.")
    model.reply("Still 21°C.")
    first = client.messages.create(model=MODEL, messages=[ASK], tools=[WEATHER], **THINKING)
    thinking, call = replay(first)
    history = [ASK, {"role": "assistant", "content": [thinking, call]}, answer(call["id"])]
    # The tool-use continuation on another model: its latest assistant message starts with the other model's block.
    second = client.messages.create(model="claude-sonnet-4-6", messages=history, tools=[WEATHER], **THINKING)
    assert second.content[-1].text == "21°C."
    later = [*history, {"role": "assistant", "content": replay(second)}, {"role": "user", "content": "And now?"}]
    third = client.messages.create(model="claude-haiku-4-5", messages=later, tools=[WEATHER], **THINKING)
    assert third.content[-1].text == "Still 21°C." and not model.rejected
    forged = {**thinking, "signature": thinking["signature"][::-1]}
    message = refused(client, model="claude-sonnet-4-6", tools=[WEATHER], **THINKING,
                      messages=[ASK, {"role": "assistant", "content": [forged, call]}, answer(call["id"])])  # fmt: skip
    assert message.startswith("messages.1.content.0: Invalid `signature` in `thinking` block")


BOUND_MODEL = "claude-opus-5-5"
ADAPTIVE: dict[str, Any] = {"thinking": {"type": "adaptive"}, "max_tokens": 2048}
DROP: dict[str, Any] = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
BINDING_BETA = "thinking-binding-controls-2026-08-01"
BOUND_TO_ANOTHER = (
    "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation. "
    'Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
)


def bound_turn(model: ScriptedModel, client: anthropic.Anthropic) -> list[dict[str, Any]]:
    """A tool-use answer of a model with preserved thinking (its system prompt "Be brief.", the question marked as a
    cache point), and the continuation that sends it back with the tool's result."""
    model.call("get_weather", {"city": "Paris"}, content="Let me look.").interleaved = True
    marked = {"role": "user", "content": [{"type": "text", "text": ASK["content"], "cache_control": POINT}]}
    first = client.messages.create(model=BOUND_MODEL, system="Be brief.", messages=[marked], tools=[WEATHER],
                                   **ADAPTIVE)  # fmt: skip
    assert [block.type for block in first.content] == ["thinking", "text", "thinking", "tool_use"]
    blocks = replay(first)
    return [ASK, {"role": "assistant", "content": blocks}, answer(blocks[-1]["id"])]


def test_a_preserved_thinking_block_is_refused_when_what_came_before_it_changed(model, client):
    history = bound_turn(model, client)
    changes = {
        "the system prompt": {"system": "Be very brief.", "tools": [WEATHER]},
        "the tools": {"system": "Be brief.", "tools": [{**WEATHER, "description": "The weather."}]},
        "an earlier message": {"system": "Be brief.", "tools": [WEATHER],
                               "messages": [{"role": "user", "content": "Weather in Paris? "}, *history[1:]]},
    }  # fmt: skip
    for what, body in changes.items():
        message = refused(client, model=BOUND_MODEL, **{"messages": history, **body}, **ADAPTIVE)
        assert message == BOUND_TO_ANOTHER, what
    # Asked for drop_block without the beta header, the error asks for the header.
    message = refused(client, model=BOUND_MODEL, system="Be very brief.", messages=history, tools=[WEATHER],
                      thinking=DROP, max_tokens=2048)  # fmt: skip
    assert message == (f"{BOUND_TO_ANOTHER} That setting requires the `{BINDING_BETA}` value in the `anthropic-beta` "
                       "header.")  # fmt: skip
    # A model without preserved thinking runs no prefix check.
    model.reply("21°C.")
    other = client.messages.create(model=MODEL, system="Be very brief.", messages=history, tools=[WEATHER],
                                   thinking={"type": "enabled", "budget_tokens": 1024}, max_tokens=2048)  # fmt: skip
    assert other.content[-1].text == "21°C."
    assert len(model.rejected) == 4


def test_an_unchanged_prefix_is_taken_whatever_its_cache_points_and_the_input_after_the_block(model, client):
    history = bound_turn(model, client)
    model.reply("21°C.")
    model.reply("Still 21°C.")
    # The cache point moved from the question to the newest block, as each request of a conversation marks it.
    history[2]["content"][-1]["cache_control"] = POINT
    system = [{"type": "text", "text": "Be brief."}]
    tools = [{**WEATHER, "cache_control": POINT}]
    second = client.messages.create(model=BOUND_MODEL, system=system, messages=history, tools=tools, **ADAPTIVE)
    assert second.content[-1].text == "21°C." and not model.rejected
    # An input edited after an answer's thinking blocks leaves them valid; the next answer's block, bound to the input
    # as it was, is dropped (with drop_block), and it alone.
    thinking, text, later, call = history[1]["content"]
    edited = [
        ASK,
        {"role": "assistant", "content": [thinking, text, later, {**call, "input": {"city": "Lyon"}}]},
        *history[2:],
        {"role": "assistant", "content": replay(second)},
        {"role": "user", "content": "And now?"},
    ]
    third = client.beta.messages.create(model=BOUND_MODEL, system="Be brief.", messages=edited, tools=[WEATHER],
                                        thinking=DROP, max_tokens=2048, betas=[BINDING_BETA])  # fmt: skip
    assert third.content[-1].text == "Still 21°C."  # type: ignore[union-attr]
    assert [entry.model_dump() for entry in third.input_transformations or []] == [
        {"type": "thinking_dropped", "path": "messages.3.content.0", "reason": "prefix_binding_mismatch"},
    ]
    assert not model.rejected


def test_drop_block_with_the_beta_header_drops_the_failing_block_and_the_rest_of_its_turn(model, client):
    history = bound_turn(model, client)
    model.reply("21°C.")
    kwargs: dict[str, Any] = {"model": BOUND_MODEL, "messages": history, "tools": [WEATHER], "thinking": DROP,
                              "max_tokens": 2048}  # fmt: skip
    with client.beta.messages.stream(system="Be very brief.", betas=[BINDING_BETA], **kwargs) as stream:
        final = stream.get_final_message()
    assert final.content[-1].text == "21°C."  # type: ignore[union-attr]
    assert [(entry.type, entry.path, entry.reason) for entry in final.input_transformations or []] == [
        ("thinking_dropped", "messages.1.content.0", "prefix_binding_mismatch"),
        ("thinking_dropped", "messages.1.content.2", "prefix_binding_mismatch"),
    ]
    # Nothing changed: nothing dropped, and no entries.
    model.reply("Still 21°C.")
    kept = client.beta.messages.create(system="Be brief.", betas=[BINDING_BETA], **kwargs)
    assert kept.content[-1].text == "Still 21°C." and kept.input_transformations is None  # type: ignore[union-attr]
    assert not model.rejected
