"""Limits in money: ``{"cost": "…", "per": …, "period": …}`` works as the token limits do (429 with Retry-After,
nothing stored for a refused turn, a turn that crosses it mid-way ends cleanly), and a model with no price under
a cost limit is refused, never counted as free."""

from decimal import Decimal

import pytest

from tests.limits.conftest import history_problems
from toolcalling.checks import check_prices, check_usage_limits
from toolcalling.models import Conversation, Message
from toolcalling.testutils import override_toolcalling
from toolcalling.usage import window

from .conftest import PRICED, post

pytestmark = pytest.mark.database  # the usage counters' conditional updates

DAILY = [{"cost": "0.001", "per": "user", "period": "day"}]
# 800 prompt tokens at 1.00 and 100 out at 4.00 per million: 0.0012, over the daily 0.001 at once.
OVER = {"prompt_tokens": 800, "completion_tokens": 100, "cached_tokens": 0}


@pytest.mark.chat_completions
@pytest.mark.toolcalling(PRICES=PRICED, USAGE_LIMITS=DAILY)
def test_a_money_limit_refuses_the_next_turn_once_the_answers_cost_reaches_it(api, model, new_conversation):
    conversation = new_conversation()
    model.reply("Dear.", usage=OVER)
    assert post(api, conversation, "first").status_code == 201

    refused = post(api, conversation, "second")
    assert refused.status_code == 429, refused.content
    body = refused.json()
    assert body["code"] == "usage_limit_exceeded" and body["messages"] == []
    assert body["limit"] == {"quantity": "cost", "maximum": "0.001", "per": "user", "period": "day",
                             "used": "0.0012000000", "resets_at": window("day")[1].isoformat()}  # fmt: skip
    assert body["detail"].startswith("You have reached your limit of 0.001 USD per day. It resets in ")
    assert 0 < int(refused["Retry-After"]) <= 25 * 3600
    stored = Message.objects.filter(conversation_id=conversation).values_list("content", flat=True)
    assert list(stored) == ["first", "Dear."]
    model.assert_done()


@pytest.mark.chat_completions
@pytest.mark.toolcalling(PRICES=PRICED, USAGE_LIMITS=DAILY)
def test_a_turn_whose_answer_crosses_the_money_limit_ends_cleanly_before_the_next_model_call(
    api, model, new_conversation
):
    conversation = new_conversation()
    model.call("add", {"a": 1, "b": 2}, usage=OVER)  # its call still runs and is answered
    response = post(api, conversation, "1 + 2?")

    assert response.status_code == 429, response.content
    body = response.json()
    assert body["code"] == "usage_limit_exceeded" and body["limit"]["used"] == "0.0012000000"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool"]
    assert Decimal(body["messages"][1]["cost"]) == Decimal("0.0012")
    assert Conversation.objects.get(pk=conversation).status == "failed"
    assert history_problems(conversation) == []
    model.assert_done()  # not asked again


@pytest.mark.chat_completions
@pytest.mark.toolcalling(PRICES=PRICED, USAGE_LIMITS=DAILY)
def test_the_usage_shows_a_money_limit_in_decimal_strings(api, model, new_conversation):
    model.reply("Some.", usage={"prompt_tokens": 300, "completion_tokens": 50, "cached_tokens": 0})
    assert post(api, new_conversation(), "hi").status_code == 201
    [limit] = [item for item in api.get("/api/toolcalling/usage/").json()["limits"] if item["quantity"] == "cost"]
    assert (limit["maximum"], limit["used"], limit["remaining"]) == ("0.001", "0.0005000000", "0.0005000000")
    assert limit["exceeded"] is False


@pytest.mark.chat_completions
@pytest.mark.toolcalling(USAGE_LIMITS=DAILY)
def test_a_model_without_a_price_under_a_money_limit_is_refused_never_free(api, model, new_conversation):
    conversation = new_conversation()
    refused = post(api, conversation, "hi")
    assert refused.status_code == 503, refused.content
    body = refused.json()
    assert (body["code"], body["status"], body["messages"]) == ("unpriced_model", "idle", [])
    assert body["detail"] == (
        "This assistant's model test-model has no price, and a cost limit applies: its use cannot be counted."
    )
    assert not Message.objects.filter(conversation_id=conversation).exists()
    assert Conversation.objects.get(pk=conversation).status == "idle"
    [error] = [m for m in check_prices() if m.id == "toolcalling.E008" and "'helper'" in m.msg]
    assert "'test-model' has no price" in error.msg
    with override_toolcalling(PRICES=PRICED):  # once it has a price the same turn runs
        model.reply("Now.")
        assert post(api, conversation, "hi").status_code == 201


@pytest.mark.parametrize("maximum", [5.0, "-1", "five", True, 0])
def test_a_money_limit_is_a_positive_decimal_string_never_a_float(maximum):
    with override_toolcalling(USAGE_LIMITS=[{"cost": maximum, "per": "user", "period": "day"}]):
        [error] = check_usage_limits()
    assert error.id == "toolcalling.E005" and "'cost' must be a positive amount" in error.msg
