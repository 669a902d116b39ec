"""The reservation a new turn's claim makes in the locked counter rows (``Meter.count(..., reserve=True)``): where
turns racing for a limit's last room are told apart, so given here the rows such a race leaves, one at a time."""

from decimal import Decimal

import pytest
from django.db import transaction
from django.utils import timezone

from toolcalling.exceptions import UsageLimitExceeded
from toolcalling.models import UsageCounter
from toolcalling.testutils import override_toolcalling
from toolcalling.usage import Counts, Meter, UsageLimit, window
from toolcalling.usage._meter import Counted

DAY = UsageLimit(quantity="turns", maximum=5, per="site", period="day")
MONTH = UsageLimit(quantity="tokens", maximum=1000, per="assistant", period="month")
MONEY = UsageLimit(quantity="cost", maximum=Decimal("2.50"), per="site", period="month")


@pytest.fixture(autouse=True)
def fresh_counter_ids(db):
    """A process remembers counter ids for good (rows are never deleted); each test's rolled back rows are not."""
    with override_toolcalling():
        yield


def meter(*limits):
    keys = {"site": "", "assistant": "helper"}
    return Meter([(limit, keys[limit.per]) for limit in limits],
                 [Counted(limit.per, keys[limit.per], limit.period) for limit in limits])  # fmt: skip


def counted(limit, **amounts):
    """Set the counter of ``limit`` in the current period, made first like a turn makes it."""
    now = timezone.now()
    meter(limit).prepare()
    UsageCounter.objects.filter(scope=limit.per, period=limit.period, period_start=window(limit.period, now)[0]).update(
        **amounts
    )


def reserve(m, counts):
    with transaction.atomic():
        m.count(counts, timezone.now(), reserve=True, status="idle")


def row(limit):
    return UsageCounter.objects.get(scope=limit.per, period=limit.period, period_start=window(limit.period)[0])


@pytest.mark.parametrize(
    ("used", "counts", "refused"),
    [
        (4, 1, False),  # the last room
        (5, 1, True),  # none left
        (4, 2, True),  # some room, not enough for what is counted before it is spent
        (3, 2, False),  # exactly enough
    ],
)
def test_a_turn_is_refused_when_the_locked_rows_have_no_room_for_what_it_counts(db, used, counts, refused):
    counted(DAY, turns=used)
    if refused:
        with pytest.raises(UsageLimitExceeded):
            reserve(meter(DAY), Counts(turns=counts))
        assert row(DAY).turns == used  # nothing of a refused turn is counted
    else:
        reserve(meter(DAY), Counts(turns=counts))
        assert row(DAY).turns == used + counts


def test_a_limit_at_its_maximum_refuses_even_what_adds_nothing_to_it(db):
    counted(MONTH, tokens=1000)
    with pytest.raises(UsageLimitExceeded) as refused:
        reserve(meter(MONTH), Counts(turns=1))
    assert refused.value.limit["quantity"] == "tokens" and refused.value.limit["used"] == 1000


def test_the_refusal_names_the_limit_that_lasts_longest_with_the_conversations_status(db):
    counted(DAY, turns=5)
    counted(MONTH, tokens=1000)
    before = timezone.now()
    with pytest.raises(UsageLimitExceeded) as refused:
        reserve(meter(DAY, MONTH), Counts(turns=1))
    error = refused.value
    end = window("month", before)[1]
    assert error.status == "idle"
    assert error.limit == {"quantity": "tokens", "maximum": 1000, "per": "assistant", "period": "month",
                           "used": 1000, "resets_at": end.isoformat()}  # fmt: skip
    assert error.wait == pytest.approx((end - before).total_seconds(), abs=60)
    assert str(error.detail).startswith("This assistant has reached its limit of 1,000 tokens per month.")
    # The day's limit alone is told when it is the only one reached.
    counted(MONTH, tokens=0)
    with pytest.raises(UsageLimitExceeded) as refused:
        reserve(meter(MONTH, DAY), Counts(turns=1))
    assert refused.value.limit["period"] == "day" and refused.value.limit["used"] == 5


def test_of_two_limits_full_that_reset_together_the_first_is_told(db):
    tokens = UsageLimit(quantity="tokens", maximum=10, per="assistant", period="day")
    counted(DAY, turns=5)
    counted(tokens, tokens=10)
    with pytest.raises(UsageLimitExceeded) as refused:
        reserve(meter(DAY, tokens), Counts(turns=1))
    assert refused.value.limit["quantity"] == "turns"


def test_a_money_limit_is_reserved_like_the_others(db):
    counted(MONEY, cost=Decimal("2.50"))
    with pytest.raises(UsageLimitExceeded) as refused:
        reserve(meter(MONEY), Counts(turns=1))
    assert refused.value.limit["used"] == "2.5000000000" and refused.value.limit["maximum"] == "2.50"
    counted(MONEY, cost=Decimal("2.4999999999"))
    reserve(meter(MONEY), Counts(turns=1))
    assert row(MONEY).turns == 1 and row(MONEY).cost == Decimal("2.4999999999")


def test_only_a_reserving_count_is_refused(db):
    counted(DAY, turns=5)
    with transaction.atomic():
        meter(DAY).count(Counts(turns=1, tokens=7), timezone.now())
    assert (row(DAY).turns, row(DAY).tokens) == (6, 7)  # what a turn already spent is always counted
