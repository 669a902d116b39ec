"""A token or money limit never takes an answer of unknown usage (none reported, or a malformed one) for free:
under ``UNKNOWN_USAGE = "stop"`` (the default) such a limit has no room left for the rest of its period, under
``"estimate"`` the answer counts as its request's estimated tokens and what they cost."""

from decimal import Decimal

import pytest

from tests.limits.conftest import history_problems
from toolcalling.conf import toolcalling_settings
from toolcalling.models import Conversation, Message, UsageCounter
from toolcalling.testing import Reply, SentUsage
from toolcalling.testing import ToolCall as ScriptedCall
from toolcalling.testutils import override_toolcalling
from toolcalling.usage import window

from .conftest import post

TOKENS = [{"tokens": 100_000, "per": "user", "period": "day"}]
MONEY = [{"cost": "5.00", "per": "user", "period": "day"}]
RATES = {"input": "1.00", "cached_input": "0.10", "output": "4.00"}


def unreported(content: str = "Hello there.") -> Reply:
    return Reply(content=content, sent_usage=SentUsage.OMITTED)


def row(user) -> UsageCounter:
    return UsageCounter.objects.get(scope="user", key=str(user.pk), period="day", period_start=window("day")[0])


def test_the_safe_choice_is_the_default():
    assert toolcalling_settings.UNKNOWN_USAGE == "stop"


@pytest.mark.each_api
@pytest.mark.parametrize("limits", [TOKENS, MONEY], ids=["tokens", "money"])
def test_under_stop_a_limit_has_no_room_once_an_answer_of_unknown_usage_is_counted(
    api, model, new_conversation, alice, limits
):
    conversation = new_conversation()
    with override_toolcalling(PRICES={toolcalling_settings.MODEL: RATES}, USAGE_LIMITS=limits):
        model.queue(unreported())
        assert post(api, conversation, "first").status_code == 201
        refused = post(api, conversation, "second")
        report = api.get("/api/toolcalling/usage/").json()

    assert refused.status_code == 429, refused.content
    body = refused.json()
    assert body["code"] == "usage_limit_exceeded" and body["messages"] == []
    assert body["detail"].startswith("The model endpoint did not report what an earlier answer used, so the limit")
    assert 0 < int(refused["Retry-After"]) <= 25 * 3600
    counted = row(alice)
    assert (counted.tokens, counted.cost, counted.unknown_usage, counted.unpriced_replies) == (0, 0, 1, 1)
    (limit,) = [shown for shown in report["limits"] if "helper" in shown["assistants"]]
    assert limit["exceeded"] is True and Decimal(limit["remaining"]) == 0
    model.assert_done()  # not asked for the refused turn


@pytest.mark.each_api
@pytest.mark.toolcalling(USAGE_LIMITS=TOKENS)
def test_under_stop_a_turn_whose_answer_has_unknown_usage_ends_before_the_next_model_call(api, model, new_conversation):
    conversation = new_conversation()
    model.queue(Reply(tool_calls=[ScriptedCall(name="add", arguments={"a": 1, "b": 2})], sent_usage=None))
    response = post(api, conversation, "1 + 2?")

    assert response.status_code == 429, response.content
    body = response.json()
    assert body["code"] == "usage_limit_exceeded"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool"]  # its call still ran
    assert body["messages"][1]["cost"] is None
    assert Conversation.objects.get(pk=conversation).status == "failed"
    assert history_problems(conversation) == []
    model.assert_done()


@pytest.mark.each_api
@pytest.mark.toolcalling(USAGE_LIMITS=[{"turns": 10, "per": "user", "period": "day"}])
def test_under_stop_a_limit_of_turns_is_not_concerned(api, model, new_conversation):
    conversation = new_conversation()
    model.queue(unreported())
    model.reply("Again.")
    assert post(api, conversation, "first").status_code == 201
    assert post(api, conversation, "second").status_code == 201
    model.assert_done()


@pytest.mark.each_api
def test_under_estimate_an_answer_of_unknown_usage_counts_as_its_estimated_tokens_and_their_cost(
    api, model, new_conversation, alice
):
    conversation = new_conversation()
    with override_toolcalling(
        PRICES={toolcalling_settings.MODEL: RATES}, USAGE_LIMITS=[*TOKENS, *MONEY], UNKNOWN_USAGE="estimate"
    ):
        model.queue(unreported())
        model.reply("Again.", usage={"prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 0})
        assert post(api, conversation, "first").status_code == 201
        estimated = row(alice)
        assert post(api, conversation, "second").status_code == 201  # room is left: the turn runs

    # The request as sent (instructions, the message, the offered tools) and the answer, a token per 4 characters.
    request = model.requests[0]
    assert 20 < estimated.tokens < len(str(request)) // 2
    rates = Decimal(1) * (estimated.tokens - 4) + Decimal(4) * 4  # "Hello there.": 12 characters, 3 + 1 tokens
    assert estimated.cost == rates / 1_000_000
    assert (estimated.unknown_usage, estimated.unpriced_replies) == (1, 1)
    answer = Message.objects.filter(conversation_id=conversation, role="assistant").first()
    assert answer.cost is None and answer.usage_unknown is True  # the estimate is counted, never stored as a cost
    after = row(alice)
    assert after.tokens == estimated.tokens + 1100 and after.unknown_usage == 1
    model.assert_done()


@pytest.mark.each_api
def test_under_estimate_a_tight_limit_is_reached_by_the_estimate(api, model, new_conversation):
    conversation = new_conversation()
    with override_toolcalling(UNKNOWN_USAGE="estimate", USAGE_LIMITS=[{"tokens": 20, "per": "user", "period": "day"}]):
        model.queue(unreported())
        assert post(api, conversation, "first").status_code == 201
        refused = post(api, conversation, "second")

    assert refused.status_code == 429, refused.content
    assert refused.json()["detail"].startswith("You have reached your limit of 20 tokens per day.")
    model.assert_done()
