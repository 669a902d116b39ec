"""The strict server's ``/v1/responses``, driven through the real openai SDK's ``client.responses``: the shapes it
answers in, and the real API's rules it refuses requests by (each with the API's own error text)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from toolcalling.testing import OpenAICompatibleServer, ScriptedModel

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": False,
}
STATELESS: dict[str, Any] = {"store": False, "include": ["reasoning.encrypted_content"]}
ASK = {"role": "user", "content": "Weather in Paris?"}


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def client(model: ScriptedModel) -> Iterator[openai.OpenAI]:
    with OpenAICompatibleServer(model) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def replay(response: Any) -> list[dict[str, Any]]:
    """A response's output items as the next request's input, as a stateless client sends them back."""
    return [item.model_dump(exclude_none=True) for item in response.output]


def refused(client: openai.OpenAI, **body: Any) -> str:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(**body)
    return caught.value.body["message"]  # type: ignore[index]


def test_a_reasoning_model_answers_with_reasoning_then_its_call_and_takes_it_back(model, client):
    model.call("get_weather", {"city": "Paris"})
    model.reply("21°C.")
    first = client.responses.create(model="gpt-5-mini", input=[ASK], tools=[WEATHER], **STATELESS)
    assert [item.type for item in first.output] == ["reasoning", "function_call"]
    reasoning, call = first.output
    assert reasoning.encrypted_content and reasoning.id.startswith("rs_")
    assert (call.name, json.loads(call.arguments), call.call_id) == ("get_weather", {"city": "Paris"}, "call_1")
    assert first.usage.output_tokens_details.reasoning_tokens > 0
    assert first.usage.input_tokens_details.cached_tokens == 0

    output = {"type": "function_call_output", "call_id": call.call_id, "output": '{"temp_c": 21}'}
    second = client.responses.create(model="gpt-5-mini", input=[ASK, *replay(first), output], tools=[WEATHER],
                                     **STATELESS)  # fmt: skip
    assert second.output_text == "21°C."
    assert second.usage.input_tokens_details.cached_tokens > 0  # the instructions, tools and question again
    assert not model.rejected


def test_a_function_call_without_its_reasoning_item_is_refused(model, client):
    model.call("get_weather", {"city": "Paris"})
    first = client.responses.create(model="gpt-5-mini", input=[ASK], tools=[WEATHER], **STATELESS)
    reasoning, call = replay(first)
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "21"}
    message = refused(client, model="gpt-5-mini", input=[ASK, call, output], tools=[WEATHER], **STATELESS)
    assert message == (
        f"Item '{call['id']}' of type 'function_call' was provided without its required 'reasoning' item: "
        f"'{reasoning['id']}'."
    )


def test_a_reasoning_item_without_its_encrypted_content_is_refused_when_nothing_is_stored(model, client):
    model.call("get_weather", {"city": "Paris"})
    first = client.responses.create(model="gpt-5-mini", input=[ASK], tools=[WEATHER], **STATELESS)
    reasoning, call = replay(first)
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "21"}
    bare = {key: value for key, value in reasoning.items() if key != "encrypted_content"}
    message = refused(client, model="gpt-5-mini", input=[ASK, bare, call, output], tools=[WEATHER], store=False)
    assert message.startswith(f"Item with id '{reasoning['id']}' not found. Items are not persisted when `store`")
    forged = {**reasoning, "encrypted_content": "gAAAAforged"}
    message = refused(client, model="gpt-5-mini", input=[ASK, forged, call, output], tools=[WEATHER], **STATELESS)
    assert message == f"The encrypted content for item {reasoning['id']} could not be verified."


def test_call_outputs_must_answer_an_earlier_call_and_every_call_must_be_answered(client):
    call = {"type": "function_call", "call_id": "call_9", "name": "get_weather", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "call_8", "output": "21"}
    message = refused(client, model="gpt-4.1", input=[ASK, call, output], tools=[WEATHER])
    assert "No tool call found for function call output with call_id call_8." in message
    assert "No tool output found for function call call_9." in message


def test_unknown_keys_are_refused_at_every_level(client):
    assert (
        refused(client, model="gpt-4.1", input=[ASK], extra_body={"messages": []}) == "Unknown parameter: 'messages'."
    )
    odd = {**ASK, "name": "alice"}
    assert refused(client, model="gpt-4.1", input=[odd]) == "Unknown parameter: 'input[0].name'."
    tool = {**WEATHER, "function": {}}
    assert refused(client, model="gpt-4.1", input=[ASK], tools=[tool]) == "Unknown parameter: 'tools[0].function'."


def test_reasoning_models_refuse_sampling_options_on_both_apis(client):
    # Chat Completions words a temperature other than the default as an unsupported value (recorded for o3 and
    # o4-mini: tests/contract/fixtures/chat_completions/temperature_refused_by_o3.json and its sources).
    on_chat = {"temperature": "Unsupported value: 'temperature' does not support 0.5 with this model. "
               "Only the default (1) value is supported."}  # fmt: skip
    for key in ("temperature", "top_p"):
        expected = f"Unsupported parameter: '{key}' is not supported with this model."
        assert refused(client, model="o4-mini", input=[ASK], **{key: 0.5}) == expected
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="o4-mini", messages=[ASK], **{key: 0.5})  # type: ignore[list-item]
        assert caught.value.body["message"] == on_chat.get(key, expected)  # type: ignore[index]


def test_reasoning_models_refuse_function_tools_on_chat_completions(model, client):
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER["parameters"]}}
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-5.4", messages=[ASK], tools=[tool])  # type: ignore[list-item]
    assert caught.value.body["message"] == (  # type: ignore[index]
        "Function tools with reasoning_effort are not supported for gpt-5.4 in /v1/chat/completions. "
        "Please use /v1/responses instead."
    )
    model.reply("Fine without tools.")
    answer = client.chat.completions.create(model="gpt-5.4", messages=[ASK])  # type: ignore[list-item]
    assert answer.choices[0].message.content == "Fine without tools."
    assert answer.usage.completion_tokens_details.reasoning_tokens > 0


def test_a_stream_sends_text_and_argument_deltas_then_the_completed_response(model, client):
    model.calls(("get_weather", {"city": "Paris"}), content="Looking it up.")
    events = list(client.responses.create(model="gpt-5-mini", input=[ASK], tools=[WEATHER], stream=True,
                                          **STATELESS))  # fmt: skip
    kinds = [event.type for event in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    arguments = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert text == "Looking it up." and json.loads(arguments) == {"city": "Paris"}
    assert kinds.count("response.output_text.delta") > 1  # cut into pieces, as a real model sends it
    final = events[-1].response
    assert [item.type for item in final.output] == ["reasoning", "message", "function_call"]


def test_structured_output_is_checked_as_text_format(model, client):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    model.reply('{"ok": true}')
    text = {"format": {"type": "json_schema", "name": "Ok", "schema": schema}}
    fine = client.responses.create(model="gpt-4.1", input=[ASK], text=text)  # type: ignore[arg-type]
    assert json.loads(fine.output_text) == {"ok": True}
    fmt = {"type": "json_object"}
    message = refused(client, model="gpt-4.1", input=[ASK], text={"format": fmt})
    assert "must contain the word 'json' in some form to use 'text.format' of type 'json_object'" in message


def test_the_offline_model_answers_the_responses_api_too():
    from toolcalling.contrib.offline._model import OFFLINE_BASE_URL, offline_http_client

    offline = openai.OpenAI(base_url=OFFLINE_BASE_URL, api_key="x", http_client=offline_http_client(), max_retries=0)
    order = {**WEATHER, "name": "get_order_status", "description": "Look up the shipping status of an order.",
             "parameters": {"type": "object", "properties": {"order_no": {"type": "string",
             "description": "Order number, e.g. 20250719-0032"}}}}  # fmt: skip
    question = {"role": "user", "content": "Where is my order 20250719-0032?"}
    first = offline.responses.create(model="offline", input=[question], tools=[WEATHER, order], **STATELESS)
    [call] = first.output
    assert (call.type, call.name, json.loads(call.arguments)) == ("function_call", "get_order_status",
                                                                 {"order_no": "20250719-0032"})  # fmt: skip
    result = {"type": "function_call_output", "call_id": call.call_id, "output": '{"status": "shipped"}'}
    second = offline.responses.create(model="offline", input=[question, *replay(first), result], tools=[WEATHER, order],
                                      **STATELESS)  # fmt: skip
    assert "shipped" in second.output_text


def test_a_reasoning_item_without_the_id_of_the_item_issued_after_it_is_refused(model, client):
    model.call("get_weather", {"city": "Paris"})
    first = client.responses.create(model="gpt-5-mini", input=[ASK], tools=[WEATHER], **STATELESS)
    reasoning, call = replay(first)
    bare = {key: value for key, value in call.items() if key != "id"}
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "21"}
    message = refused(client, model="gpt-5-mini", input=[ASK, reasoning, bare, output], tools=[WEATHER], **STATELESS)
    assert message == f"Item '{reasoning['id']}' of type 'reasoning' was provided without its required following item."


def test_a_reasoning_item_must_come_right_before_the_item_issued_after_it(model, client):
    model.reply("Let me check.")
    model.call("get_weather", {"city": "Paris"})
    model.reply("21°C.")
    first = client.responses.create(model="gpt-5-mini", input=[ASK], tools=[WEATHER], **STATELESS)
    second = client.responses.create(model="gpt-5-mini", input=[ASK, *replay(first), ASK], tools=[WEATHER],
                                     **STATELESS)  # fmt: skip
    reasoning, call = replay(second)
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "21"}
    moved = [ASK, *replay(first), reasoning, ASK, call, output]  # something else between them
    message = refused(client, model="gpt-5-mini", input=moved, tools=[WEATHER], **STATELESS)
    assert message == f"Item '{reasoning['id']}' of type 'reasoning' was provided without its required following item."


def test_a_message_id_without_its_reasoning_item_is_refused(model, client):
    model.reply("Hello.")
    first = client.responses.create(model="gpt-5-mini", input=[ASK], **STATELESS)
    reasoning, message_item = replay(first)
    assert message_item["id"].startswith("msg_")
    message = refused(client, model="gpt-5-mini", input=[ASK, message_item, ASK], **STATELESS)
    assert message == (
        f"Item '{message_item['id']}' of type 'message' was provided without its required 'reasoning' item: "
        f"'{reasoning['id']}'."
    )


def test_an_answer_sent_back_without_its_reasoning_and_without_ids_is_accepted(model, client):
    model.call("get_weather", {"city": "Paris"})
    model.reply("Hello.")
    model.reply("21°C.")
    first = client.responses.create(model="gpt-5-mini", input=[ASK], tools=[WEATHER], **STATELESS)
    _, call = replay(first)
    bare = {key: value for key, value in call.items() if key != "id"}
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "21"}
    second = client.responses.create(model="gpt-5-mini", input=[ASK, bare, output], tools=[WEATHER], **STATELESS)
    _, message_item = replay(second)
    text = {key: value for key, value in message_item.items() if key != "id"}
    third = client.responses.create(model="gpt-5-mini", input=[ASK, bare, output, text, ASK], tools=[WEATHER],
                                    **STATELESS)  # fmt: skip
    assert third.output_text == "21°C."
    assert not model.rejected
