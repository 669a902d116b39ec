"""What answers cost, stored with each message and added up on its conversation: at the rates set in
``PRICES``, from the token counts the strict server reported, cached tokens at the cached rate."""

import json
from decimal import Decimal

import pytest

from toolcalling import Assistant
from toolcalling.conf import toolcalling_settings
from toolcalling.models import Conversation
from toolcalling.testutils import override_toolcalling

pytestmark = pytest.mark.database  # decimal costs stored and added up by the database

RATES = {"input": "1.25", "cached_input": "0.125", "output": "10.00"}
URL = "/api/toolcalling/conversations/{}/messages/"


def expected(message) -> Decimal:
    """The cost of a stored answer from its counts, at ``RATES``: uncached input, cached input, output."""
    uncached = message.prompt_tokens - message.cached_tokens
    money = uncached * Decimal("1.25") + message.cached_tokens * Decimal("0.125") + message.completion_tokens * 10
    return money / 1_000_000


@pytest.mark.each_api
def test_each_answer_costs_its_tokens_at_the_set_prices_and_the_conversation_adds_them_up(model, api, conversation):
    with override_toolcalling(PRICES={toolcalling_settings.MODEL: RATES}):
        model.call("add", {"a": 1, "b": 2}, usage={"prompt_tokens": 900, "completion_tokens": 70, "cached_tokens": 512})
        model.reply("3")  # the server counts what it read from its cache of the first request
        response = api.post(URL.format(conversation["id"]), {"content": "1 + 2?"}, format="json")
    assert response.status_code == 201, response.content

    first, second = (m for m in response.json()["messages"] if m["role"] == "assistant")
    # 388 uncached at 1.25, 512 cached at 0.125, 70 out at 10.00 per million
    assert Decimal(first["cost"]) == Decimal("0.001249")
    assert first["price"] == {**RATES, "cache_write": "1.25", "currency": "USD", "source": "settings",
                              "model": toolcalling_settings.MODEL}  # fmt: skip
    stored = Conversation.objects.get(pk=conversation["id"]).messages.filter(role="assistant").order_by("id")
    later = stored[1]
    assert later.cost == expected(later) and later.cost > 0
    conv = api.get(f"/api/toolcalling/conversations/{conversation['id']}/").json()
    assert Decimal(conv["cost"]) == Decimal("0.001249") + expected(later)
    assert conv["unpriced_replies"] == 0


def test_reasoning_tokens_are_priced_as_output(model, alice):
    usage = {"prompt_tokens": 1000, "completion_tokens": 300, "cached_tokens": 0, "reasoning_tokens": 250}
    model.reply("Thought about it.", usage=usage)
    with override_toolcalling(PRICES={toolcalling_settings.MODEL: {"input": "2", "output": "8"}}):
        answer = Assistant.get("helper").run(alice, "Think").messages[-1]
    assert answer.reasoning_tokens == 250
    assert answer.cost == Decimal("0.0044")  # 1000 * 2 + 300 * 8, per million


def test_a_model_without_a_price_costs_null_never_zero(model, api, conversation):
    model.reply("Free?", usage={"prompt_tokens": 100, "completion_tokens": 10})
    response = api.post(URL.format(conversation["id"]), {"content": "hi"}, format="json")
    assert response.status_code == 201, response.content

    answer = response.json()["messages"][-1]
    assert answer["cost"] is None and answer["price"] is None
    conv = api.get(f"/api/toolcalling/conversations/{conversation['id']}/").json()
    assert conv["cost"] is None and conv["unpriced_replies"] == 1


def test_a_conversation_of_priced_and_unpriced_replies_shows_the_priced_sum_and_counts_the_others(model, alice):
    model.reply("Priced.", usage={"prompt_tokens": 1000, "completion_tokens": 100})
    with override_toolcalling(PRICES={toolcalling_settings.MODEL: {"input": "1", "output": "2"}}):
        result = Assistant.get("helper").run(alice, "one")
    model.reply("Unpriced.", usage={"prompt_tokens": 1000, "completion_tokens": 100})
    Assistant.get("helper").run(alice, "two", conversation=result.conversation)

    conversation = Conversation.objects.get(pk=result.conversation.pk)
    assert conversation.cost == Decimal("0.0012")
    assert conversation.unpriced_replies == 1


@pytest.mark.toolcalling(API="anthropic", MODEL="claude-sonnet-4-5")
def test_tokens_anthropic_wrote_to_its_cache_are_priced_at_the_cache_write_rate(model, alice):
    rates = {"input": "3", "cached_input": "0.30", "output": "15", "cache_write": "3.75"}
    usage = {"input_tokens": 100, "cache_read_input_tokens": 2000, "cache_creation_input_tokens": 1000,
             "output_tokens": 50}  # fmt: skip
    message = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
               "content": [{"type": "text", "text": "Cached."}], "stop_reason": "end_turn", "usage": usage}  # fmt: skip
    model.raw(json.dumps(message))
    with override_toolcalling(PRICES={"claude-sonnet-4-5": rates}):
        answer = Assistant.get("helper").run(alice, "hi").messages[-1]
    assert (answer.prompt_tokens, answer.cached_tokens) == (3100, 2000)
    # 100 fresh at 3, 2000 read at 0.30, 1000 written at 3.75, 50 out at 15, per million
    assert answer.cost == Decimal("0.0054")  # 0.00465 if the writes were priced as input


def test_the_conversation_a_run_returns_counts_each_unpriced_answer_once(model, alice):
    model.call("add", {"a": 1, "b": 2}, usage={"prompt_tokens": 100, "completion_tokens": 10})
    model.reply("3", usage={"prompt_tokens": 120, "completion_tokens": 5})
    conversation = Assistant.get("helper").run(alice, "1 + 2?").conversation
    assert (conversation.unpriced_replies, conversation.cost) == (2, None)  # as stored
    assert Conversation.objects.get(pk=conversation.pk).unpriced_replies == 2


def test_an_answer_reporting_no_tokens_is_not_counted_unpriced_in_the_conversation_or_the_usage_report(
    model, api, conversation
):
    # A local server that counts nothing: there is nothing to price, so no answer is told as unpriced.
    model.reply("Counted nothing.", usage=(0, 0))
    model.reply("Counted one.", usage=(1, 0))
    for content in ("hi", "again"):
        response = api.post(URL.format(conversation["id"]), {"content": content}, format="json")
        assert response.status_code == 201, response.content
        assert response.json()["messages"][-1]["cost"] is None
    assert Conversation.objects.get(pk=conversation["id"]).unpriced_replies == 1
    day = api.get("/api/toolcalling/usage/").json()["usage"]["day"]
    assert (day["tokens"], day["cost"], day["unpriced_replies"]) == (1, "0.0000000000", 1)
