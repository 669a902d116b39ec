"""The scripted model, strict validation, local server and offline model, driven through the real openai SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest

from toolcalling.contrib.offline._model import OFFLINE_BASE_URL, OFFLINE_MODEL_NAME, OfflineModel, offline_http_client
from toolcalling.testing import (
    OpenAICompatibleServer,
    Reply,
    ScriptedModel,
    ToolCall,
    mock_transport,
    validate_chat_request,
)

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
TIME_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}},
}
ORDER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_order_status",
        "description": "Look up the shipping status of an order.",
        "parameters": {
            "type": "object",
            "properties": {"order_no": {"type": "string", "description": "Order number, e.g. 20250719-0032"}},
            "required": ["order_no"],
        },
    },
}
USER = {"role": "user", "content": "What's the weather in Paris and the time there?"}


def assistant_calls(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            for call_id in ids
        ],
    }


def tool_result(call_id: str, content: str = '{"temp_c": 21}') -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def server(model: ScriptedModel) -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer(model) as running:
        yield running


@pytest.fixture
def client(server: OpenAICompatibleServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def create(client: openai.OpenAI, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    return client.chat.completions.create(model="gpt-test", messages=messages, **kwargs)


# --- round trips --------------------------------------------------------------------------------


def test_tool_call_then_reply_round_trip(model: ScriptedModel, client: openai.OpenAI) -> None:
    queued = model.call("get_weather", {"city": "Paris"}, usage=(11, 3))
    model.reply("It is 21°C in Paris.")

    first = create(client, [USER], tools=[WEATHER_TOOL])
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    [call] = choice.message.tool_calls
    assert call.id == queued.tool_calls[0].id == "call_1"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert first.model == "gpt-test"
    assert (first.usage.prompt_tokens, first.usage.completion_tokens, first.usage.total_tokens) == (11, 3, 14)

    history = [USER, choice.message.model_dump(exclude_none=True), tool_result(call.id)]
    second = create(client, history, tools=[WEATHER_TOOL])
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "It is 21°C in Paris."
    assert second.choices[0].message.tool_calls is None
    # Unscripted usage is a deterministic estimate from the request and the reply.
    expected_prompt = len(json.dumps(model.requests[1]["messages"] + [WEATHER_TOOL])) // 4
    assert second.usage.prompt_tokens == expected_prompt
    assert second.usage.completion_tokens == len("It is 21°C in Paris.") // 4 + 1

    assert len(model.requests) == 2
    assert model.requests[0]["tools"] == [WEATHER_TOOL]
    assert model.requests[1]["messages"][-1] == tool_result("call_1")
    assert model.rejected == [] and model.unexpected == []
    model.assert_done()


def test_call_ids_are_unique_across_the_models_life(model: ScriptedModel, client: openai.OpenAI) -> None:
    model.calls(("get_weather", {"city": "Paris"}), ("get_time", {"tz": "CET"}))
    model.call("get_weather", {"city": "Oslo"})
    ids = [
        c.id
        for _ in range(2)
        for c in create(client, [USER], tools=[WEATHER_TOOL, TIME_TOOL]).choices[0].message.tool_calls
    ]
    assert ids == ["call_1", "call_2", "call_3"]


def test_raw_string_arguments_are_sent_verbatim(model: ScriptedModel, client: openai.OpenAI) -> None:
    model.call("get_weather", '{"city": "Par')
    call = create(client, [USER], tools=[WEATHER_TOOL]).choices[0].message.tool_calls[0]
    assert call.function.arguments == '{"city": "Par'


def test_respond_builds_reply_from_the_request(model: ScriptedModel, client: openai.OpenAI) -> None:
    model.respond(lambda body: Reply(content=f"you said: {body['messages'][-1]['content']}"))
    model.respond(lambda body: Reply(tool_calls=[ToolCall(name=body["tools"][0]["function"]["name"])]))
    assert create(client, [{"role": "user", "content": "ping"}]).choices[0].message.content == "you said: ping"
    call = create(client, [USER], tools=[TIME_TOOL]).choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, call.function.arguments) == ("call_1", "get_time", "{}")


# --- the strict tool-message rules --------------------------------------------------------------


def test_unanswered_tool_call_is_rejected(model: ScriptedModel, client: openai.OpenAI) -> None:
    model.reply("never sent")
    history = [USER, assistant_calls("call_a", "call_b"), tool_result("call_a"), {"role": "user", "content": "and?"}]
    with pytest.raises(openai.BadRequestError) as caught:
        create(client, history, tools=[WEATHER_TOOL])
    message = caught.value.message
    assert "An assistant message with 'tool_calls' must be followed by tool messages responding to each" in message
    assert "messages[1]" in message and "call_b" in message and "call_a" not in message.split("messages:")[-1]
    assert model.requests == []
    assert len(model.rejected) == 1 and model.rejected[0].body["messages"] == history
    assert model.pending == 1


def test_history_cannot_end_with_unanswered_calls(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="must be followed by tool messages"):
        create(client, [USER, assistant_calls("call_a")], tools=[WEATHER_TOOL])


def test_tool_message_without_preceding_call_is_rejected(model: ScriptedModel, client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        create(client, [USER, tool_result("call_a")], tools=[WEATHER_TOOL])
    assert "messages[1]" in caught.value.message
    assert "Messages with role 'tool' must be a response to a preceeding message with 'tool_calls'" in (
        caught.value.message
    )
    # A user turn between the call and its answer breaks the pairing too.
    history = [USER, assistant_calls("call_a"), {"role": "user", "content": "hurry"}, tool_result("call_a")]
    with pytest.raises(openai.BadRequestError) as caught:
        create(client, history, tools=[WEATHER_TOOL])
    assert "must be followed by tool messages" in caught.value.message
    assert "messages[3]: Messages with role 'tool'" in caught.value.message
    assert len(model.rejected) == 2


def test_tool_results_may_arrive_in_any_order(model: ScriptedModel, client: openai.OpenAI) -> None:
    model.reply("done")
    history = [USER, assistant_calls("call_a", "call_b"), tool_result("call_b"), tool_result("call_a")]
    assert create(client, history, tools=[WEATHER_TOOL]).choices[0].message.content == "done"
    assert model.requests[0]["messages"] == history


def test_tool_call_answered_twice_is_rejected(client: openai.OpenAI) -> None:
    history = [USER, assistant_calls("call_a"), tool_result("call_a"), tool_result("call_a")]
    with pytest.raises(openai.BadRequestError, match="already answered"):
        create(client, history, tools=[WEATHER_TOOL])


def test_tool_call_arguments_must_be_json_text(client: openai.OpenAI) -> None:
    message = assistant_calls("call_a")
    message["tool_calls"][0]["function"]["arguments"] = {"city": "Paris"}
    with pytest.raises(openai.BadRequestError, match=r"messages\[1\]\.tool_calls\[0\]\.function\.arguments"):
        create(client, [USER, message, tool_result("call_a")], tools=[WEATHER_TOOL])


# --- tools, tool_choice, response_format --------------------------------------------------------


def test_invalid_tool_name_is_rejected(client: openai.OpenAI) -> None:
    bad = {"type": "function", "function": {"name": "get weather!", "parameters": {"type": "object"}}}
    with pytest.raises(openai.BadRequestError) as caught:
        create(client, [USER], tools=[bad])
    assert "tools[0].function.name" in caught.value.message
    assert "does not match pattern" in caught.value.message


def test_duplicate_tool_names_are_rejected(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="duplicate function name 'get_weather'"):
        create(client, [USER], tools=[WEATHER_TOOL, WEATHER_TOOL])


def test_bad_tool_schema_is_rejected(client: openai.OpenAI) -> None:
    bad = {"type": "function", "function": {"name": "list_things", "parameters": {"type": "array"}}}
    with pytest.raises(openai.BadRequestError, match="Invalid schema for function 'list_things'"):
        create(client, [USER], tools=[bad])
    not_strict_enough = json.loads(json.dumps(WEATHER_TOOL))
    not_strict_enough["function"]["strict"] = True
    with pytest.raises(openai.BadRequestError, match="'additionalProperties' is required"):
        create(client, [USER], tools=[not_strict_enough])


def test_tool_choice_must_name_an_offered_tool(client: openai.OpenAI) -> None:
    choice = {"type": "function", "function": {"name": "get_time"}}
    with pytest.raises(openai.BadRequestError, match="'get_time' was not found"):
        create(client, [USER], tools=[WEATHER_TOOL], tool_choice=choice)
    with pytest.raises(openai.BadRequestError, match="only allowed when 'tools' are specified"):
        create(client, [USER], tool_choice="auto")


def test_response_format_is_checked(model: ScriptedModel, client: openai.OpenAI) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "bad name", "schema": {"type": "object"}}}
    with pytest.raises(openai.BadRequestError, match="response_format.json_schema.name"):
        create(client, [USER], response_format=fmt)
    with pytest.raises(openai.BadRequestError, match="must contain the word 'json'"):
        create(client, [USER], response_format={"type": "json_object"})
    model.reply('{"a": 1}')
    reply = create(client, [{"role": "user", "content": "Answer in JSON"}], response_format={"type": "json_object"})
    assert json.loads(reply.choices[0].message.content) == {"a": 1}


# --- errors, auth, routing ----------------------------------------------------------------------


def test_error_statuses_map_to_sdk_exceptions(model: ScriptedModel, client: openai.OpenAI) -> None:
    model.error(status=500, message="boom")
    model.error(status=429)
    model.error(status=503)
    with pytest.raises(openai.InternalServerError) as caught:
        create(client, [USER])
    assert caught.value.status_code == 500 and caught.value.message.endswith("boom")
    with pytest.raises(openai.RateLimitError) as limited:
        create(client, [USER])
    assert limited.value.body["code"] == "rate_limit_exceeded"
    with pytest.raises(openai.InternalServerError) as overloaded:
        create(client, [USER])
    assert overloaded.value.status_code == 503
    assert len(model.requests) == 3


def test_sdk_retries_a_scripted_error(model: ScriptedModel, server: OpenAICompatibleServer) -> None:
    model.error(status=503, retry_after=0.01)
    model.reply("second time lucky")
    retrying = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=1)
    assert create(retrying, [USER]).choices[0].message.content == "second time lucky"
    assert len(model.requests) == 2


def test_empty_queue_fails_loudly_without_retries(model: ScriptedModel, server: OpenAICompatibleServer) -> None:
    retrying = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=2)
    with pytest.raises(openai.InternalServerError, match="ScriptedModel: no reply queued"):
        create(retrying, [USER])
    # The error tells the SDK not to retry, so exactly one request was made.
    assert len(model.unexpected) == 1
    assert model.unexpected[0]["messages"] == [USER]
    with pytest.raises(AssertionError, match="no reply queued"):
        model.assert_done()


def test_requests_need_a_bearer_token_and_json(server: OpenAICompatibleServer) -> None:
    url = f"{server.base_url}/chat/completions"
    body = {"model": "m", "messages": [USER]}
    with httpx2.Client() as http:
        unauthorised = http.post(url, json=body)
        assert unauthorised.status_code == 401
        assert "API key" in unauthorised.json()["error"]["message"]
        garbled = http.post(url, content=b"{not json", headers={"Authorization": "Bearer k"})
        assert garbled.status_code == 400
        assert "could not parse the JSON body" in garbled.json()["error"]["message"]
        missing = http.get(f"{server.base_url}/nowhere", headers={"Authorization": "Bearer k"})
        assert missing.status_code == 404


def test_models_endpoint_lists_one_model(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["scripted-model"]


# --- streaming ----------------------------------------------------------------------------------


def test_streaming_reassembles_content_and_tool_calls(model: ScriptedModel, client: openai.OpenAI) -> None:
    model.calls(
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"tz": "Europe/Paris"}),
        content="Let me check both.",
        usage=(40, 12),
    )
    stream = create(
        client, [USER], tools=[WEATHER_TOOL, TIME_TOOL], stream=True, stream_options={"include_usage": True}
    )
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    argument_chunks: dict[int, int] = {}
    finish_reasons: list[str] = []
    usage = None
    chunk_count = 0
    for chunk in stream:
        chunk_count += 1
        assert chunk.object == "chat.completion.chunk"
        if chunk.usage is not None:
            usage = chunk.usage
            assert chunk.choices == []
            continue
        choice = chunk.choices[0]
        if choice.finish_reason:
            finish_reasons.append(choice.finish_reason)
        if choice.delta.content:
            text.append(choice.delta.content)
        for part in choice.delta.tool_calls or []:
            slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
            if part.id:
                assert part.function.arguments == ""  # the opening delta carries only the identity
                slot["id"], slot["name"] = part.id, part.function.name
            elif part.function.arguments:
                argument_chunks[part.index] = argument_chunks.get(part.index, 0) + 1
                slot["arguments"] += part.function.arguments

    assert len(text) > 1 and "".join(text) == "Let me check both."
    assert [calls[i]["id"] for i in sorted(calls)] == ["call_1", "call_2"]
    assert [calls[i]["name"] for i in sorted(calls)] == ["get_weather", "get_time"]
    assert json.loads(calls[0]["arguments"]) == {"city": "Paris"}
    assert json.loads(calls[1]["arguments"]) == {"tz": "Europe/Paris"}
    assert argument_chunks[0] > 1 and argument_chunks[1] > 1
    assert finish_reasons == ["tool_calls"]
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (40, 12, 52)
    assert chunk_count > 10


def test_streaming_without_include_usage_has_no_usage(model: ScriptedModel, client: openai.OpenAI) -> None:
    model.reply("Hello there")
    chunks = list(create(client, [USER], stream=True))
    assert all(chunk.usage is None for chunk in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Hello there"
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_stream_is_sent_as_chunked_server_sent_events(model: ScriptedModel, server: OpenAICompatibleServer) -> None:
    model.reply("abcdefgh")
    body = {"model": "m", "messages": [USER], "stream": True}
    headers = {"Authorization": "Bearer k"}
    with (
        httpx2.Client() as http,
        http.stream("POST", f"{server.base_url}/chat/completions", json=body, headers=headers) as r,
    ):
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["transfer-encoding"] == "chunked"
        events = [line for line in r.iter_lines() if line]
    assert events[-1] == "data: [DONE]"
    assert all(line.startswith("data: ") for line in events)


def test_stream_options_require_stream(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="'stream_options' is only allowed"):
        create(client, [USER], stream_options={"include_usage": True})


# --- in-process transport -----------------------------------------------------------------------


def test_mock_transport_serves_the_same_backend(model: ScriptedModel) -> None:
    model.call("get_weather", {"city": "Paris"})
    model.reply("streamed reply")
    sdk = openai.OpenAI(
        base_url="http://model.invalid/v1",
        api_key="x",
        max_retries=0,
        http_client=httpx2.Client(transport=mock_transport(model)),
    )
    call = create(sdk, [USER], tools=[WEATHER_TOOL]).choices[0].message.tool_calls[0]
    assert (call.id, call.function.name) == ("call_1", "get_weather")
    pieces = [c.choices[0].delta.content or "" for c in create(sdk, [USER], stream=True) if c.choices]
    assert "".join(pieces) == "streamed reply"
    with pytest.raises(openai.BadRequestError, match="must be followed by tool messages"):
        create(sdk, [USER, assistant_calls("call_1")], tools=[WEATHER_TOOL])
    assert len(model.requests) == 2 and len(model.rejected) == 1


# --- validate_chat_request directly ---------------------------------------------------------------


def test_valid_request_has_no_errors() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "developer", "content": "Be brief."},
            USER,
            assistant_calls("call_a", "call_b"),
            tool_result("call_b"),
            tool_result("call_a", [{"type": "text", "text": "21C"}]),  # type: ignore[arg-type]
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
        ],
        "tools": [WEATHER_TOOL, TIME_TOOL],
        "tool_choice": {"type": "function", "function": {"name": "get_time"}},
        "parallel_tool_calls": False,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert validate_chat_request(body) == []


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"messages": [USER]}, "you must provide a model parameter"),
        ({"model": "m", "messages": []}, "'messages': empty array"),
        ({"model": "m", "messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role"),
        ({"model": "m", "messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
        ({"model": "m", "messages": [{"role": "assistant", "content": None}]}, "messages[0].content"),
        ({"model": "m", "messages": [USER], "temprature": 1}, "Unrecognized request argument supplied: temprature"),
        ({"model": "m", "messages": [USER], "tools": []}, "'tools': empty array"),
        ({"model": "m", "messages": [USER], "stream": "yes"}, "Invalid type for 'stream'"),
        ({"model": "m", "messages": [USER], "tool_choice": "sometimes"}, "Invalid value for 'tool_choice'"),
        (
            {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": {"temp": 1}}]},
            "messages[0].content",
        ),
    ],
)
def test_invalid_requests_are_described(body: dict[str, Any], fragment: str) -> None:
    errors = validate_chat_request(body)
    assert any(fragment in error for error in errors), errors


# --- the offline demo model ---------------------------------------------------------------------


@pytest.fixture
def offline() -> openai.OpenAI:
    return openai.OpenAI(base_url=OFFLINE_BASE_URL, api_key="offline", http_client=offline_http_client(), max_retries=0)


def offline_create(client: openai.OpenAI, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    return client.chat.completions.create(model=OFFLINE_MODEL_NAME, messages=messages, **kwargs)


def test_offline_model_calls_the_matching_tool(offline: openai.OpenAI) -> None:
    question = {"role": "user", "content": "Where is my order 20250719-0032?"}
    first = offline_create(offline, [question], tools=[WEATHER_TOOL, ORDER_TOOL])
    assert first.choices[0].finish_reason == "tool_calls"
    [call] = first.choices[0].message.tool_calls
    assert call.function.name == "get_order_status"
    assert json.loads(call.function.arguments) == {"order_no": "20250719-0032"}
    assert first.usage.total_tokens > 0

    result = json.dumps({"status": "shipped", "carrier": "DHL", "eta": "2025-07-22"})
    history = [question, first.choices[0].message.model_dump(exclude_none=True), tool_result(call.id, result)]
    second = offline_create(offline, history, tools=[WEATHER_TOOL, ORDER_TOOL])
    text = second.choices[0].message.content
    assert second.choices[0].finish_reason == "stop"
    assert "shipped" in text and "DHL" in text and "2025-07-22" in text


def test_offline_model_asks_for_a_missing_argument(offline: openai.OpenAI) -> None:
    reply = offline_create(offline, [{"role": "user", "content": "Where is my order?"}], tools=[ORDER_TOOL])
    assert reply.choices[0].message.tool_calls is None
    assert reply.choices[0].message.content.startswith("Which order number")


def test_offline_model_explains_itself_when_nothing_matches(offline: openai.OpenAI) -> None:
    reply = offline_create(offline, [{"role": "user", "content": "Tell me a joke"}], tools=[ORDER_TOOL])
    text = reply.choices[0].message.content
    assert reply.choices[0].message.tool_calls is None
    assert "offline" in text
    assert "Look up the shipping status of an order." in text


def test_offline_model_reports_tool_errors_and_is_deterministic() -> None:
    offline = OfflineModel()
    question = {"role": "user", "content": "Status of order 20250719-0032 please"}
    body = {"model": "m", "messages": [question], "tools": [ORDER_TOOL]}
    first, again = offline(body), offline(body)
    assert first.tool_calls[0].id == again.tool_calls[0].id
    call = {
        "id": first.tool_calls[0].id,
        "type": "function",
        "function": {"name": "get_order_status", "arguments": "{}"},
    }
    failed = tool_result(call["id"], json.dumps({"error": "Order not found"}))
    answer = offline({"model": "m", "messages": [question, {"role": "assistant", "tool_calls": [call]}, failed]})
    assert answer.content == "Get order status did not work: Order not found."


def test_offline_model_answers_as_offline_and_words_tool_errors_neutrally(offline: openai.OpenAI) -> None:
    question = {"role": "user", "content": "Status of order 20250719-0032 please"}
    first = offline_create(offline, [question], tools=[ORDER_TOOL])
    assert first.model == "offline"
    call = first.choices[0].message.tool_calls[0]
    asked = {"role": "assistant", "tool_calls": [call.model_dump(include={"id", "type", "function"})]}
    failed = tool_result(call.id, "Error: ValueError: No order 20250719-0032 for this customer.")
    answer = offline_create(offline, [question, asked, failed], tools=[ORDER_TOOL])
    text = answer.choices[0].message.content
    assert text == "Get order status did not work this time. Please check the details and try again."
    assert "ValueError" not in text and answer.model == "offline"
