"""Usage an endpoint reports malformed or not at all is *unknown*, never a count of 0: read so on every model API,
streamed or not, stored so (cost ``null``, never ``0``), and counted as unpriced in the conversation, the usage
counters and ``GET usage/``. A ``total_tokens`` below its parts is corrected from them."""

from decimal import Decimal
from typing import Any

import pytest

from toolcalling.conf import toolcalling_settings
from toolcalling.hooks import ModelRequest
from toolcalling.model_apis import HistoryMessage, UserMessage, get_model_api
from toolcalling.models import Conversation, Message, UsageCounter
from toolcalling.testing import Reply, SentUsage
from toolcalling.testutils import override_toolcalling
from toolcalling.usage import window

from .conftest import post

RATES = {"input": "1.00", "cached_input": "0.10", "output": "4.00"}

# The names each API gives the input and output counts of its usage object.
NAMES = {
    "chat_completions": ("prompt_tokens", "completion_tokens"),
    "responses": ("input_tokens", "output_tokens"),
    "anthropic": ("input_tokens", "output_tokens"),
}


def counts(model_api: str, prompt: Any, completion: Any, total: Any) -> dict[str, Any]:
    """A usage object in the API's own names (Anthropic's has no total: the one sent is ignored there)."""
    given, made = NAMES[model_api]
    return {given: prompt, made: completion, "total_tokens": total}


MALFORMED = {
    "missing": lambda api: SentUsage.OMITTED,
    "null": lambda api: None,
    "not an object": lambda api: [12, 3],
    "empty": lambda api: {},
    "without its output": lambda api: {NAMES[api][0]: 12},
    "negative": lambda api: counts(api, -5, 10, 5),
    "floats": lambda api: counts(api, 12.0, 3.0, 15.0),
    "strings": lambda api: counts(api, "12", "3", "15"),
    "a null count": lambda api: counts(api, 12, None, 12),
    "booleans": lambda api: counts(api, True, True, 2),
}


def ask() -> ModelRequest:
    messages: list[HistoryMessage] = [UserMessage("Say hello.")]
    return ModelRequest(model=toolcalling_settings.MODEL, messages=messages, tools=[])


@pytest.mark.each_api
@pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
@pytest.mark.parametrize("shape", list(MALFORMED))
def test_usage_sent_malformed_or_not_at_all_is_read_as_unknown(model, model_api, stream, shape):
    model.queue(Reply(content="Hello there.", sent_usage=MALFORMED[shape](model_api)))
    reply = get_model_api().send(ask(), on_delta=(lambda piece: None) if stream else None)

    assert reply.content == "Hello there."
    assert reply.usage.known is False
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (0, 0, 0)
    model.assert_done()


@pytest.mark.each_api
@pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
def test_a_total_below_its_parts_is_corrected_from_them(model, model_api, stream):
    model.queue(Reply(content="Hello there.", sent_usage=counts(model_api, 100, 20, 7)))
    reply = get_model_api().send(ask(), on_delta=(lambda piece: None) if stream else None)

    assert reply.usage.known is True
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (100, 20, 120)


@pytest.mark.each_api
@pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
def test_a_total_above_its_parts_or_missing_is_kept_or_made_from_them(model, model_api, stream):
    above = counts(model_api, 100, 20, 130)
    missing = {key: value for key, value in counts(model_api, 100, 20, None).items() if key != "total_tokens"}
    model.queue(Reply(content="One.", sent_usage=above))
    model.queue(Reply(content="Two.", sent_usage=missing))
    on_delta = (lambda piece: None) if stream else None
    first, second = get_model_api().send(ask(), on_delta=on_delta), get_model_api().send(ask(), on_delta=on_delta)

    # Anthropic's usage has no total: its total is always the sum of its parts.
    assert first.usage.total_tokens == (120 if model_api == "anthropic" else 130)
    assert (second.usage.known, second.usage.total_tokens) == (True, 120)


@pytest.mark.each_api
@pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
def test_parts_of_the_input_or_output_above_their_whole_are_their_whole(model, model_api, stream):
    given, made = NAMES[model_api]
    if model_api == "anthropic":  # the cache reads are a part of the input beside input_tokens, never above it
        sent = {given: 100, made: 20, "output_tokens_details": {"thinking_tokens": 50}}
    else:
        sent = {**counts(model_api, 100, 20, 120), f"{given}_details": {"cached_tokens": 500},
                f"{made}_details": {"reasoning_tokens": 50}}  # fmt: skip
    model.queue(Reply(content="Hello there.", sent_usage=sent))
    reply = get_model_api().send(ask(), on_delta=(lambda piece: None) if stream else None)

    assert reply.usage.reasoning_tokens == 20
    assert reply.usage.cached_tokens == (0 if model_api == "anthropic" else 100)


@pytest.mark.chat_completions
def test_a_stream_asks_for_usage_and_a_server_that_ignores_it_gives_unknown_usage(model):
    model.queue(Reply(content="Hello there.", sent_usage=SentUsage.OMITTED))
    reply = get_model_api().send(ask(), on_delta=lambda piece: None)

    assert model.requests[0]["stream_options"] == {"include_usage": True}
    assert reply.usage.known is False


@pytest.mark.database  # counted by the usage counters' conditional updates
@pytest.mark.each_api
@pytest.mark.parametrize("shape", ["missing", "strings", "negative"])
def test_an_answer_of_unknown_usage_is_stored_and_counted_as_unpriced_never_as_free(
    api, model, model_api, new_conversation, alice, shape
):
    conversation = new_conversation()
    with override_toolcalling(PRICES={toolcalling_settings.MODEL: RATES}):
        model.queue(Reply(content="Hello there.", sent_usage=MALFORMED[shape](model_api)))
        response = post(api, conversation, "hi")
        assert response.status_code == 201, response.content
        report = api.get("/api/toolcalling/usage/").json()

    answer = response.json()["messages"][-1]
    assert answer["cost"] is None and answer["price"] is None
    stored = Message.objects.get(pk=answer["id"])
    assert stored.usage_unknown is True and stored.cost is None and stored.total_tokens == 0
    conv = Conversation.objects.get(pk=conversation)
    assert conv.cost is None and conv.unpriced_replies == 1
    row = UsageCounter.objects.get(scope="user", key=str(alice.pk), period="day", period_start=window("day")[0])
    assert (row.unpriced_replies, row.unknown_usage, row.cost) == (1, 1, Decimal(0))
    for period in ("day", "month"):
        assert report["usage"][period]["unpriced_replies"] == 1
        assert report["usage"][period]["unknown_usage_replies"] == 1
    model.assert_done()


@pytest.mark.database  # counted by the usage counters' conditional updates
@pytest.mark.each_api
def test_an_answer_with_its_usage_is_priced_and_not_counted_as_unknown(api, model, model_api, new_conversation):
    conversation = new_conversation()
    with override_toolcalling(PRICES={toolcalling_settings.MODEL: RATES}):
        model.queue(Reply(content="Hello there.", sent_usage=counts(model_api, 1000, 100, 7)))
        response = post(api, conversation, "hi")
        report = api.get("/api/toolcalling/usage/").json()

    answer = response.json()["messages"][-1]
    assert Decimal(answer["cost"]) == Decimal("0.0014")  # 1000 in at 1.00, 100 out at 4.00, per million
    assert Message.objects.get(pk=answer["id"]).usage_unknown is False
    assert Conversation.objects.get(pk=conversation).unpriced_replies == 0
    assert report["usage"]["day"]["unpriced_replies"] == report["usage"]["day"]["unknown_usage_replies"] == 0
    assert report["usage"]["day"]["tokens"] == 1100
