"""``GET usage/`` reports what the user's answers cost in the current day and month, beside the tokens and turns,
with the currency; answers of a model with no price are counted beside the cost, never in it."""

from decimal import Decimal

import pytest

from toolcalling.testutils import override_toolcalling

from .conftest import PRICED, post

pytestmark = pytest.mark.database  # usage added up by the database, per day and month


@pytest.mark.chat_completions
@pytest.mark.toolcalling(PRICES=PRICED, CURRENCY="EUR")
def test_the_usage_shows_the_cost_of_the_day_and_the_month_in_the_currency(api, model, new_conversation, alice, bob):
    model.call("add", {"a": 1, "b": 2}, usage={"prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 600})
    model.reply("3", usage={"prompt_tokens": 2000, "completion_tokens": 50, "cached_tokens": 0})
    assert post(api, new_conversation(), "1+2").status_code == 201
    api.force_authenticate(bob)
    model.reply("Bob's.", usage=(400, 100))
    assert post(api, new_conversation(), "bob here").status_code == 201

    api.force_authenticate(alice)
    body = api.get("/api/toolcalling/usage/").json()
    assert body["currency"] == "EUR"
    # 400 uncached at 1.00 + 600 cached at 0.10 + 100 out at 4.00, then 2000 in + 50 out: per million
    expected = (Decimal(400 + 60 + 400) + Decimal(2000 + 200)) / 1_000_000
    for period in ("day", "month"):
        assert Decimal(body["usage"][period]["cost"]) == expected == Decimal("0.00306")
        assert body["usage"][period]["unpriced_replies"] == 0
        assert body["usage"][period]["tokens"] == 3150


@pytest.mark.chat_completions
def test_answers_without_a_price_are_counted_beside_the_cost(api, model, new_conversation):
    model.reply("Unpriced.", usage=(100, 10))
    assert post(api, new_conversation(), "hi").status_code == 201
    with override_toolcalling(PRICES=PRICED):
        model.reply("Priced.", usage={"prompt_tokens": 1000, "completion_tokens": 0, "cached_tokens": 0})
        assert post(api, new_conversation(), "hi").status_code == 201
        day = api.get("/api/toolcalling/usage/").json()["usage"]["day"]
    assert Decimal(day["cost"]) == Decimal("0.001") and day["unpriced_replies"] == 1
