"""How a reached limit is put to the user for each kind of scope, whose counter a limit counts in, and the
calendar periods with and without time zones: the pieces every limit check is made of, given fixed moments."""

import datetime
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.test import override_settings
from django.utils import translation

from toolcalling.testutils import override_toolcalling
from toolcalling.usage import Counts, UsageLimit, exceeded, window
from toolcalling.usage._meter import scope_key

END = datetime.datetime(2026, 3, 2, tzinfo=datetime.UTC)
NOW = END - datetime.timedelta(hours=5)


def by_tenant(ctx):
    return ctx.extra.get("tenant")


@pytest.mark.parametrize(
    ("per", "name", "detail"),
    [
        ("user", "", "You have reached your limit of 200,000 tokens per day. It resets in 5\xa0hours."),
        ("assistant", "", "This assistant has reached its limit of 200,000 tokens per day. It resets in 5\xa0hours."),
        ("site", "", "This site has reached its limit of 200,000 tokens per day. It resets in 5\xa0hours."),
        (by_tenant, "tenant", "The limit of 200,000 tokens per day for tenant is reached. It resets in 5\xa0hours."),
    ],
)
def test_a_reached_limit_is_worded_for_its_scope(per, name, detail):
    limit = UsageLimit(quantity="tokens", maximum=200_000, per=per, period="day", name=name)
    error = exceeded(limit, 200_001, END, NOW, status="idle")
    assert str(error.detail) == detail
    assert error.status == "idle"
    assert error.limit["per"] == (name or per) and error.limit["used"] == 200_001


@pytest.mark.parametrize(
    ("quantity", "period", "words"),
    [("turns", "hour", "3 messages per hour"), ("tool_calls", "month", "3 tool calls per month")],
)
def test_quantities_and_periods_have_their_own_words(quantity, period, words):
    error = exceeded(UsageLimit(quantity=quantity, maximum=3, per="user", period=period), 3, END, NOW)
    assert str(error.detail).startswith(f"You have reached your limit of {words}.")


def test_a_cost_limit_is_told_in_the_sites_currency_with_its_cents_and_grouping():
    limit = UsageLimit(quantity="cost", maximum=Decimal("1234.50"), per="user", period="day")
    with override_toolcalling(CURRENCY="EUR"):
        error = exceeded(limit, Decimal("1234.50"), END, NOW)
    assert str(error.detail) == "You have reached your limit of 1,234.50 EUR per day. It resets in 5\xa0hours."
    assert error.limit["maximum"] == "1234.50" and error.limit["used"] == "1234.50"


@pytest.mark.parametrize(
    ("quantity", "maximum", "period", "per", "detail"),
    [
        ("tokens", 200_000, "hour", "user", "Sie haben Ihr Limit von 200.000 Tokens pro Stunde erreicht."),
        ("turns", 3, "day", "assistant", "Dieser Assistent hat sein Limit von 3 Nachrichten pro Tag erreicht."),
        ("tool_calls", 1000, "month", "site", "Diese Website hat ihr Limit von 1.000 Tool-Aufrufe pro Monat erreicht."),
        ("cost", Decimal("1234.50"), "day", by_tenant, "Das Limit von 1.234,50 USD pro Tag für tenant ist erreicht."),
    ],
)
def test_a_reached_limit_is_told_in_the_users_language(quantity, maximum, period, per, detail):
    limit = UsageLimit(
        quantity=quantity, maximum=maximum, per=per, period=period, name="" if per != by_tenant else "tenant"
    )
    with translation.override("de"):
        error = exceeded(limit, maximum, END, NOW)
    assert str(error.detail) == f"{detail} Es wird in 5\xa0Stunden zurückgesetzt."


def test_whose_counter_a_limit_counts_in():
    ctx = SimpleNamespace(user=SimpleNamespace(pk=7), extra={"tenant": "acme"})
    key = lambda per: scope_key(UsageLimit(quantity="tokens", maximum=1, per=per, period="day"), ctx, "helper")  # noqa: E731
    assert (key("user"), key("assistant"), key("site"), key(by_tenant)) == ("7", "helper", "", "acme")
    assert (
        scope_key(UsageLimit(quantity="tokens", maximum=1, per="user", period="day"), SimpleNamespace(user=None), "x")
        == ""
    )
    assert key(lambda ctx: None) is None  # the limit does not apply to this user
    assert key(lambda ctx: 42) == "42"
    assert key(lambda ctx: "t" * 200) == "t" * 200  # as long as a counter's key may be
    longer = key(lambda ctx: "t" * 201)
    assert longer.startswith("sha256:") and len(longer) == len("sha256:") + 64
    assert longer != key(lambda ctx: "t" * 202)  # never cut: two long keys never share a counter


@override_settings(USE_TZ=False)
def test_without_time_zones_periods_are_naive():
    now = datetime.datetime(2026, 12, 31, 23, 30)
    assert window("hour", now) == (datetime.datetime(2026, 12, 31, 23), datetime.datetime(2027, 1, 1))
    assert window("day", now) == (datetime.datetime(2026, 12, 31), datetime.datetime(2027, 1, 1))
    assert window("month", now) == (datetime.datetime(2026, 12, 1), datetime.datetime(2027, 1, 1))


def test_an_unknown_period_is_an_error_and_usage_is_true_when_anything_was_counted():
    with pytest.raises(ValueError, match="Unknown period 'week'; one of hour, day, month."):
        window("week", END)
    assert not Counts() and Counts(tokens=1) and Counts(turns=1) and Counts(tool_calls=1)
