"""The Responses API through the real SDK against the strict server: stateless requests, reasoning items kept and
sent back, structured output, usage with cached and reasoning tokens, a switch from Chat Completions, and the
error that sends a site there."""

import json

import pytest

from toolcalling import Assistant
from toolcalling.exceptions import ModelError
from toolcalling.model_apis import reasoning_items
from toolcalling.models import Conversation, Message
from toolcalling.testutils import override_toolcalling

from .assistants import Verdict

RESPONSES = pytest.mark.toolcalling(API="responses", MODEL="gpt-5-mini")
GOOD = json.dumps({"answer": "yes", "confidence": 0.9})


def post(api, conversation_id, content):
    return api.post(f"/api/toolcalling/conversations/{conversation_id}/messages/", {"content": content}, format="json")


def as_issued(message):
    """A stored answer's items as the API issued them (without the model they were issued to)."""
    return [item for item in message.provider_items if item["type"] != "issued_to"]


def items_of(request, kind):
    return [item for item in request["input"] if item.get("type") == kind]


@RESPONSES
def test_requests_are_stateless_and_carry_the_whole_history(strict_model, alice):
    strict_model.call("add", {"a": 2, "b": 3})
    strict_model.reply("5")
    result = Assistant.get("helper").run(alice, "2 + 3?")
    strict_model.reply("You asked for a sum.")
    Assistant.get("helper").run(alice, "What did I ask?", conversation=result.conversation)

    for request in strict_model.requests:
        assert request["store"] is False and request["include"] == ["reasoning.encrypted_content"]
        assert "previous_response_id" not in request and "messages" not in request
        assert request["instructions"] == "You are a test helper."
        add = next(t for t in request["tools"] if t["name"] == "add")
        assert add["type"] == "function" and add["strict"] is False and add["parameters"]["type"] == "object"
    last = strict_model.requests[-1]["input"]
    assert [item.get("type", item.get("role")) for item in last] == [
        "message", "reasoning", "function_call", "function_call_output", "reasoning", "message", "message",
    ]  # fmt: skip
    assert last[0] == {"type": "message", "role": "user", "content": "2 + 3?"}
    assert last[3]["output"] == "5" and last[3]["call_id"] == last[2]["call_id"]


@RESPONSES
def test_every_answer_goes_back_as_it_was_issued_with_its_item_ids(strict_model, alice):
    strict_model.calls(("add", {"a": 1, "b": 2}), ("whoami", {}))
    strict_model.call("add", {"a": 3, "b": 3})
    strict_model.reply("Done.")
    result = Assistant.get("helper").run(alice, "Sums, and who am I?")

    answers = [m for m in result.messages if m.role == "assistant"]
    # Stored as issued, with the model they were issued to (never sent: only that model can read the reasoning).
    assert [[item["type"] for item in m.provider_items] for m in answers] == [
        ["reasoning", "function_call", "function_call", "issued_to"], ["reasoning", "function_call", "issued_to"],
        ["reasoning", "message", "issued_to"],
    ]  # fmt: skip
    assert all(m.provider_items[-1] == {"type": "issued_to", "model": "gpt-5-mini"} for m in answers)
    assert all(item["id"] for m in answers for item in as_issued(m))
    third = strict_model.requests[2]["input"]
    sent = [item for item in third if item.get("type") in ("reasoning", "function_call")]
    # As issued: encrypted content, ids and all, each reasoning item right before the item issued after it.
    assert sent == [*as_issued(answers[0]), *as_issued(answers[1])]
    assert [item["type"] for item in third] == [
        "message", "reasoning", "function_call", "function_call", "function_call_output", "function_call_output",
        "reasoning", "function_call", "function_call_output",
    ]  # fmt: skip
    assert answers[-1].content == "Done." and not strict_model.rejected


@RESPONSES
def test_model_options_pass_through(strict_model, alice):
    strict_model.reply("Fine.")
    Assistant.get("lf_responses").run(alice, "Hello")
    assert strict_model.last_request["reasoning"] == {"effort": "low"}
    assert "temperature" not in strict_model.last_request


@pytest.mark.toolcalling(API="responses", MODEL="gpt-5-mini", MODEL_OPTIONS={"temperature": 0.2})
def test_a_reasoning_model_refuses_sampling_options_as_the_real_api_does(model, alice):
    with pytest.raises(ModelError, match="'temperature' is not supported with this model"):
        Assistant.get("helper").run(alice, "Hello")
    assert len(model.rejected) == 1 and not model.requests


@pytest.mark.chat_completions
def test_an_assistant_api_overrides_the_setting(strict_model, alice):
    strict_model.call("add", {"a": 1, "b": 1})
    strict_model.reply("2")
    result = Assistant.get("lf_responses").run(alice, "1 + 1?")
    assert all("input" in request for request in strict_model.requests)
    assert result.messages[-1].content == "2"
    strict_model.reply("Plain.")
    Assistant.get("helper").run(alice, "And you?")
    assert "messages" in strict_model.last_request  # the site's API: Chat Completions


@RESPONSES
def test_structured_output_goes_as_text_format_and_an_invalid_answer_is_retried(strict_model, alice):
    strict_model.reply('{"answer": "yes"}')
    strict_model.reply(GOOD)
    result = Assistant.get("lf_structured").run(alice, "Is it?")

    assert result.output == Verdict(answer="yes", confidence=0.9)
    fmt = strict_model.requests[0]["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["name"] == "Verdict"
    assert fmt["schema"] == Verdict.model_json_schema()
    retry = strict_model.requests[1]["input"]
    assert [item["type"] for item in retry[-3:-1]] == ["reasoning", "message"]  # the rejected answer as issued
    assert retry[-2]["id"].startswith("msg_") and retry[-2]["content"][0]["text"] == '{"answer": "yes"}'
    assert "confidence: Field required" in retry[-1]["content"]
    stored = list(result.conversation.messages.order_by("id"))
    assert [(m.role, m.data) for m in stored] == [("user", None), ("assistant", json.loads(GOOD))]


@RESPONSES
def test_usage_counts_cached_and_reasoning_tokens_per_message_and_conversation(strict_model, api, conversation):
    strict_model.call("add", {"a": 1, "b": 2})
    strict_model.reply("3")
    response = post(api, conversation["id"], "1 + 2?")
    assert response.status_code == 201, response.content

    first, second = (m for m in response.json()["messages"] if m["role"] == "assistant")
    assert first["cached_tokens"] == 0  # nothing was sent before
    assert second["cached_tokens"] > 0  # the instructions, tools and the first answer's request again
    assert second["cached_tokens"] <= second["prompt_tokens"]
    assert first["reasoning_tokens"] > 0 and second["reasoning_tokens"] > 0
    assert first["reasoning_tokens"] < first["completion_tokens"]  # part of the output, as the API counts
    conv = api.get(f"/api/toolcalling/conversations/{conversation['id']}/").json()
    assert conv["cached_tokens"] == first["cached_tokens"] + second["cached_tokens"]
    assert conv["reasoning_tokens"] == first["reasoning_tokens"] + second["reasoning_tokens"]
    assert conv["prompt_tokens"] == first["prompt_tokens"] + second["prompt_tokens"]


def test_chat_completions_usage_counts_scripted_cached_and_reasoning_tokens(strict_model, alice):
    usage = {"prompt_tokens": 900, "completion_tokens": 70, "cached_tokens": 512, "reasoning_tokens": 40}
    strict_model.reply("Counted.", usage=usage)
    result = Assistant.get("helper").run(alice, "Count")
    answer = result.messages[-1]
    assert (answer.prompt_tokens, answer.completion_tokens) == (900, 70)
    assert (answer.cached_tokens, answer.reasoning_tokens) == (512, 40)
    conversation = Conversation.objects.get(pk=result.conversation.pk)
    assert (conversation.cached_tokens, conversation.reasoning_tokens) == (512, 40)


@pytest.mark.chat_completions
def test_a_conversation_begun_on_chat_completions_continues_on_responses(strict_model, api, conversation):
    strict_model.call("add", {"a": 2, "b": 2})
    strict_model.reply("4")
    assert post(api, conversation["id"], "2 + 2?").status_code == 201
    assert "messages" in strict_model.last_request

    with override_toolcalling(API="responses", MODEL="gpt-5-mini"):
        strict_model.call("add", {"a": 4, "b": 4})
        strict_model.reply("8")
        response = post(api, conversation["id"], "Double it.")
    assert response.status_code == 201, response.content
    sent = strict_model.requests[-1]["input"]
    kinds = [item.get("type") for item in sent]
    # The old answer has no reasoning; the new call keeps the one it came with.
    assert kinds == ["message", "function_call", "function_call_output", "message", "message", "reasoning",
                     "function_call", "function_call_output"]  # fmt: skip
    stored = Message.objects.filter(conversation_id=conversation["id"], role="assistant").order_by("id")
    assert [len(reasoning_items(m.provider_items)) for m in stored] == [0, 0, 1, 1]


@pytest.mark.chat_completions
@pytest.mark.toolcalling(MODEL="gpt-5.4")
def test_a_reasoning_model_with_tools_on_chat_completions_is_a_model_error_naming_the_setting(model, api, conversation):
    response = post(api, conversation["id"], "2 + 2?")
    assert response.status_code == 502
    body = response.json()
    assert body["code"] == "model_error"
    assert "Function tools with reasoning_effort are not supported for gpt-5.4" in body["detail"]
    assert 'set TOOLCALLING["API"] (or the assistant\'s api) to "responses"' in body["detail"]
    assert [m["role"] for m in body["messages"]] == ["user"]  # the user's message is kept

    with override_toolcalling(API="responses"):
        model.reply("Now it works.")
        response = post(api, conversation["id"], "Again?")
    assert response.status_code == 201, response.content
    assert response.json()["messages"][-1]["content"] == "Now it works."


@RESPONSES
@pytest.mark.parametrize(
    "body",
    [
        '{"output": [{"type": "message", "content": "not a list"}]}',
        '{"output": [{"type": "function_call", "call_id": "c1", "arguments": "{}"}]}',
        '{"status": "completed", "output": []}',
        '{"error": {"message": "overloaded"}, "output": null}',
        "not json",
    ],
)
def test_a_malformed_response_is_a_model_error_and_nothing_of_it_is_stored(model, api, conversation, body):
    model.raw(body)
    response = post(api, conversation["id"], "hi")
    assert response.status_code == 502
    assert response.json()["code"] == "model_error"
    assert list(Message.objects.filter(conversation_id=conversation["id"]).values_list("role", flat=True)) == ["user"]


@RESPONSES
def test_an_answer_of_another_model_goes_back_without_its_reasoning(strict_model, alice):
    """A reasoning item is bound to the model that issued it: the real API answers another model's with
    ``invalid_encrypted_content`` (openai/codex #17541). After an assistant's model changed, its earlier answers
    go back as new items (text and calls, no reasoning, no ids); the new model's own go back as issued."""
    strict_model.call("add", {"a": 2, "b": 3})
    strict_model.reply("5")
    first = Assistant.get("helper").run(alice, "2 + 3?")
    with override_toolcalling(API="responses", MODEL="gpt-5"):
        strict_model.call("add", {"a": 5, "b": 5})
        strict_model.reply("10")
        second = Assistant.get("helper").run(alice, "Double it.", conversation=first.conversation)
    assert second.reply == "10" and not strict_model.rejected
    after_switch = strict_model.requests[2]
    assert after_switch["model"] == "gpt-5"
    kinds = [item.get("type") for item in after_switch["input"]]
    assert kinds == ["message", "function_call", "function_call_output", "message", "message"]
    assert all("id" not in item for item in after_switch["input"])
    # Within the new model's turn, its own reasoning goes back with the call it came with.
    last = [item.get("type") for item in strict_model.requests[3]["input"]]
    assert last[-3:] == ["reasoning", "function_call", "function_call_output"]
