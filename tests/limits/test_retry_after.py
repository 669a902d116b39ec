"""A ``usage_limit_exceeded`` 429 tells the client when to come back: ``Retry-After`` is the number of seconds
until the limit's period resets, rounded up, the same moment as the body's ``resets_at``."""

import datetime
import math

import pytest
from django.utils import timezone

from toolcalling.usage import UsageLimit, exceeded, window

from .conftest import post


@pytest.mark.toolcalling(USAGE_LIMITS=[{"turns": 1, "per": "user", "period": "month"}])
def test_retry_after_is_the_time_until_the_period_resets(api, model, new_conversation):
    conversation = new_conversation()
    model.reply("Hello.")
    assert post(api, conversation, "first").status_code == 201
    before = timezone.now()
    refused = post(api, conversation, "second")
    after = timezone.now()
    assert refused.status_code == 429, refused.content
    resets_at = datetime.datetime.fromisoformat(refused.json()["limit"]["resets_at"])
    assert resets_at in (window("month", before)[1], window("month", after)[1])
    # Measured somewhere between before and after, so between these two (a month has days of seconds in it).
    longest, shortest = (math.ceil((resets_at - moment).total_seconds()) for moment in (before, after))
    assert shortest <= int(refused["Retry-After"]) <= longest
    model.assert_done()


LIMIT = UsageLimit(quantity="tokens", maximum=100, per="user", period="day")
END = datetime.datetime(2026, 3, 2, tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    ("left", "wait"),
    [
        (datetime.timedelta(hours=5, seconds=30), 5 * 3600 + 30),
        (datetime.timedelta(seconds=10, milliseconds=500), 11),  # rounded up: retrying earlier cannot succeed
        (datetime.timedelta(milliseconds=200), 1),
        (datetime.timedelta(0), 1),  # at the very end: come back at once, never "0"
    ],
)
def test_the_wait_is_rounded_up_to_whole_seconds_and_never_zero(left, wait):
    error = exceeded(LIMIT, 120, END, END - left)
    assert error.wait == wait
    assert error.limit == {"quantity": "tokens", "maximum": 100, "per": "user", "period": "day", "used": 120,
                           "resets_at": END.isoformat()}  # fmt: skip


@pytest.mark.toolcalling(
    USAGE_LIMITS=[
        {"tokens": 10, "per": "user", "period": "hour"},
        {"turns": 1, "per": "user", "period": "month"},
        {"tool_calls": 1, "per": "user", "period": "month"},
    ]
)
def test_of_several_limits_reached_the_one_that_lasts_longest_is_told(api, model, new_conversation):
    conversation = new_conversation()
    model.call("add", {"a": 1, "b": 2}, usage=(30, 10))
    model.reply("3")
    post(api, conversation, "first")
    refused = post(api, conversation, "second")
    assert refused.status_code == 429, refused.content
    # Both month limits end together; retrying after the hour's end cannot succeed.
    assert refused.json()["limit"]["period"] == "month"
    assert refused.json()["limit"]["resets_at"] == window("month")[1].isoformat()


@pytest.mark.toolcalling(
    USAGE_LIMITS=[{"turns": 1, "per": "user", "period": "day"}, {"tokens": 10, "per": "user", "period": "day"}]
)
def test_of_two_limits_reached_that_reset_together_the_first_is_told(api, model, new_conversation):
    conversation = new_conversation()
    model.reply("Hello.", usage=(30, 10))
    assert post(api, conversation, "first").status_code == 201
    refused = post(api, conversation, "second")
    assert refused.status_code == 429, refused.content
    assert refused.json()["limit"]["quantity"] == "turns" and refused.json()["limit"]["period"] == "day"
