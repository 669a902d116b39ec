"""Structured output: the schema is asked for, invalid answers are retried, the parsed value is stored and served."""

import json

import pytest
from pydantic import BaseModel

from toolcalling import Assistant, streaming
from toolcalling.exceptions import OutputValidationError
from toolcalling.models import Conversation, Message

from .assistants import Verdict

GOOD = json.dumps({"answer": "yes", "confidence": 0.9})


@pytest.mark.chat_completions
def test_the_schema_is_sent_as_response_format_and_the_answer_parsed(strict_model, alice):
    strict_model.call("add", {"a": 1, "b": 1})
    strict_model.reply(GOOD)
    result = Assistant.get("lf_structured").run(alice, "Is 1+1 two?")

    assert result.output == Verdict(answer="yes", confidence=0.9)
    fmt = strict_model.requests[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Verdict"
    assert fmt["json_schema"]["schema"] == Verdict.model_json_schema()
    assert result.messages[-1].data == {"answer": "yes", "confidence": 0.9}


@pytest.mark.each_api  # a history replayed across a structured-output retry, on each API in every pass
@pytest.mark.database
def test_an_invalid_answer_is_sent_back_with_the_errors_and_kept_out_of_the_stored_history(strict_model, alice):
    strict_model.reply("Sure, yes!")
    strict_model.reply(json.dumps({"answer": "yes", "confidence": 7}))
    strict_model.reply(GOOD, usage=(10, 5))
    result = Assistant.get("lf_structured").run(alice, "Is it?")

    assert result.output.confidence == 0.9
    second, third = strict_model.messages(1), strict_model.messages(2)
    assert second[-2] == {"role": "assistant", "content": "Sure, yes!"}
    assert second[-1]["role"] == "user" and "the answer is not valid JSON" in second[-1]["content"]
    assert "confidence: Input should be less than or equal to 1" in third[-1]["content"]
    stored = list(result.conversation.messages.order_by("id"))
    assert [(m.role, m.content) for m in stored] == [("user", "Is it?"), ("assistant", GOOD)]
    # Tokens of the rejected attempts still count.
    assert result.conversation.total_tokens > stored[-1].total_tokens == 15
    # A reader of the stream sees each retry, with what was wrong.
    retries = [e.data for e in streaming.read(result.conversation.pk, 0, 0) if e.type == "output_retry"]
    assert [r["attempt"] for r in retries] == [1, 2]
    assert "not valid JSON" in retries[0]["problem"]
    assert "less than or equal to 1" in retries[1]["problem"]


@pytest.mark.each_api  # a history replayed across a structured-output retry, on each API in every pass
@pytest.mark.database
def test_after_the_last_retry_the_turn_fails_with_a_clear_error(strict_model, alice):
    for _ in range(3):  # the first attempt and output_retries = 2
        strict_model.reply('{"answer": "yes"}')
    with pytest.raises(
        OutputValidationError, match="did not match Verdict after 3 attempts: confidence: Field required"
    ):
        Assistant.get("lf_structured").run(alice, "Is it?")

    conversation = Conversation.objects.get(user=alice)
    assert conversation.status == Conversation.Status.FAILED
    assert "confidence: Field required" in conversation.error
    # The last answer is kept, so the history stays valid and shows what the model said.
    strict_model.reply(GOOD)
    Assistant.get("lf_structured").run(alice, "Try again", conversation)
    roles = [m["role"] for m in strict_model.messages(-1)]
    assert roles == ["system", "user", "assistant", "user"]


class City(BaseModel):
    name: str
    population: int


@pytest.mark.chat_completions
def test_output_type_per_call_and_json_object_mode(strict_model, alice):
    strict_model.reply('{"name": "Oslo", "population": 700000}')
    result = Assistant.get("lf_json_object").run(alice, "Largest city of Norway?", output_type=City)

    assert result.output == City(name="Oslo", population=700000)
    request = strict_model.requests[0]
    assert request["response_format"] == {"type": "json_object"}
    system = request["messages"][0]["content"]
    assert "JSON" in system and json.dumps(City.model_json_schema()) in system


def test_the_api_returns_the_parsed_data(strict_model, api):
    conversation = api.post("/api/toolcalling/conversations/", {"assistant": "lf_structured"}, format="json").json()
    strict_model.reply(GOOD)
    response = api.post(
        f"/api/toolcalling/conversations/{conversation['id']}/messages/", {"content": "?"}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["messages"][-1]["data"] == {"answer": "yes", "confidence": 0.9}
    history = api.get(f"/api/toolcalling/conversations/{conversation['id']}/messages/").json()
    assert history[-1]["data"] == {"answer": "yes", "confidence": 0.9}


@pytest.mark.each_api  # a history replayed across a structured-output retry, on each API in every pass
@pytest.mark.database
def test_the_api_reports_a_validation_failure(strict_model, api):
    conversation = api.post("/api/toolcalling/conversations/", {"assistant": "lf_structured"}, format="json").json()
    for _ in range(3):
        strict_model.reply("no json")
    response = api.post(
        f"/api/toolcalling/conversations/{conversation['id']}/messages/", {"content": "?"}, format="json"
    )
    assert response.status_code == 422
    body = response.json()
    assert (body["code"], body["status"]) == ("output_validation_failed", "failed")
    assert Message.objects.filter(conversation_id=conversation["id"], role="assistant").count() == 1
