"""Costs beyond what a cost column holds (``Decimal(20, 10)``: below ten thousand million) are never written, on
any database: an answer whose cost would not fit counts as unpriced, a total that would pass the column's
maximum stops at it, and a rate of that size is refused by system check E007. So every later read of the
conversation, ``usage/`` and the admin's cost pages answers, never a 500 (SQLite stored such a cost and then
failed to read it back)."""

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from toolcalling.checks import check_prices
from toolcalling.models import Conversation, Message, UsageCounter
from toolcalling.models._money import COST_DECIMAL_PLACES, COST_DIGITS
from toolcalling.testutils import override_toolcalling
from toolcalling.usage._prices import MAX_COST

from .conftest import post

pytestmark = pytest.mark.database  # the cost columns' range on each database

# Absurd, but below the check's bound: two million prompt tokens cost 18,000,000,000.
ABSURD = {"test-model": {"input": "9000000000", "output": "9000000000"}}
HUGE = {"prompt_tokens": 2_000_000, "completion_tokens": 10, "cached_tokens": 0}
# Each answer fits (9,000,000,000), two do not.
BIG = {"prompt_tokens": 1_000_000, "completion_tokens": 0, "cached_tokens": 0}


def reads_answer(api, admin_client, conversation):
    """Every page that reads the costs answers."""
    for url in (
        f"/api/toolcalling/conversations/{conversation}/",
        f"/api/toolcalling/conversations/{conversation}/messages/",
        "/api/toolcalling/conversations/",
        "/api/toolcalling/usage/",
    ):
        assert api.get(url).status_code == 200, url
    for url in (
        "/admin/toolcalling/conversation/",
        f"/admin/toolcalling/conversation/{conversation}/change/",
        "/admin/toolcalling/message/",
        "/admin/toolcalling/usagecounter/",
        "/admin/toolcalling/usagecounter/spend/",
        "/admin/toolcalling/usagecounter/spend/?format=csv",
    ):
        assert admin_client.get(url).status_code == 200, url


@pytest.mark.chat_completions
@pytest.mark.toolcalling(PRICES=ABSURD)
def test_an_answer_whose_cost_does_not_fit_counts_as_unpriced(api, model, new_conversation, admin_client):
    conversation = new_conversation()
    model.reply("Dear.", usage=HUGE)
    response = post(api, conversation, "hi")
    assert response.status_code == 201, response.content
    assert response.json()["messages"][1]["cost"] is None

    stored = Conversation.objects.get(pk=conversation)
    assert (stored.cost, stored.unpriced_replies) == (None, 1)
    assert Message.objects.get(conversation=stored, role="assistant").cost is None
    alice = get_user_model().objects.get(username="alice")
    counted = UsageCounter.objects.get(scope="user", key=str(alice.pk), period="day")
    assert (counted.cost, counted.unpriced_replies, counted.tokens) == (0, 1, 2_000_010)
    reads_answer(api, admin_client, conversation)
    model.assert_done()


@pytest.mark.chat_completions
@pytest.mark.toolcalling(PRICES=ABSURD)
def test_totals_stop_at_the_most_a_cost_column_holds(api, model, new_conversation, admin_client):
    conversation = new_conversation()
    for text in ("one", "two"):
        model.reply(text, usage=BIG)
        assert post(api, conversation, text).status_code == 201
    costs = list(Message.objects.filter(conversation_id=conversation, role="assistant").values_list("cost", flat=True))
    assert costs == [Decimal(9_000_000_000), Decimal(9_000_000_000)]  # each answer is priced
    stored = Conversation.objects.get(pk=conversation)
    assert (stored.cost, stored.unpriced_replies) == (MAX_COST, 0)  # the sum stops at the column's maximum
    alice = get_user_model().objects.get(username="alice")
    for counted in UsageCounter.objects.filter(scope="user", key=str(alice.pk)):
        assert counted.cost == MAX_COST
    reads_answer(api, admin_client, conversation)
    model.assert_done()


@pytest.mark.parametrize("rate", ["9999999999.991", "10000000000", "1E+12"])
def test_a_rate_no_cost_column_could_hold_is_refused_at_start_up(rate):
    with override_toolcalling(PRICES={"big": {"input": "1.00", "output": rate}}):
        [error] = [m for m in check_prices() if m.id == "toolcalling.E007"]
    assert "'big': 'output' must be at most 9999999999.99 per million tokens" in error.msg


def test_the_largest_rate_is_accepted():
    with override_toolcalling(PRICES={"big": {"input": "1.00", "output": "9999999999.99"}}):
        assert not [m for m in check_prices() if m.id == "toolcalling.E007"]


def test_the_largest_cost_fits_every_cost_column():
    for model in (Conversation, Message, UsageCounter):
        field = model._meta.get_field("cost")
        assert (field.max_digits, field.decimal_places) == (COST_DIGITS, COST_DECIMAL_PLACES)
    assert MAX_COST < Decimal(10) ** (COST_DIGITS - COST_DECIMAL_PLACES)
    # What SQLite reads back (a float, to 15 significant digits) still fits.
    assert Decimal(repr(float(MAX_COST))) < Decimal(10) ** (COST_DIGITS - COST_DECIMAL_PLACES)
