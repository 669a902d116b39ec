"""The usage report as of a given moment, and for a user who has not used anything: zeros, with that moment's
periods, never another period's counters."""

import datetime

import pytest
from django.utils import timezone

from toolcalling.toolkit import assistants
from toolcalling.usage import report, window

from .conftest import post

LIMITS = [{"tokens": 5000, "per": "user", "period": "day"}]


@pytest.mark.toolcalling(USAGE_LIMITS=LIMITS)
def test_a_user_who_used_nothing_gets_zeros(api, model, bob):
    api.force_authenticate(bob)
    body = api.get("/api/toolcalling/usage/").json()
    for period in ("day", "month"):
        assert {k: body["usage"][period][k] for k in ("tokens", "turns", "tool_calls")} == {
            "tokens": 0,
            "turns": 0,
            "tool_calls": 0,
        }
    [limit] = [item for item in body["limits"] if item["maximum"] == 5000]
    assert (limit["used"], limit["remaining"], limit["exceeded"]) == (0, 5000, False)


@pytest.mark.toolcalling(USAGE_LIMITS=LIMITS)
def test_the_report_as_of_another_moment_shows_that_moments_periods(api, model, new_conversation, alice):
    model.reply("Hello.", usage=(80, 20))
    assert post(api, new_conversation(), "hi").status_code == 201
    now = timezone.now()
    today = report(alice, [assistants.get("helper")()], now=now)
    assert today["usage"]["day"]["tokens"] == 100
    last_year = now - datetime.timedelta(days=400)
    then = report(alice, [assistants.get("helper")()], now=last_year)
    assert then["usage"]["day"] == {
        "period_start": window("day", last_year)[0].isoformat(),
        "resets_at": window("day", last_year)[1].isoformat(),
        "tokens": 0,
        "turns": 0,
        "tool_calls": 0,
        "cost": "0.0000000000",
        "unpriced_replies": 0,
        "unknown_usage_replies": 0,
    }
    assert then["usage"]["month"]["period_start"] == window("month", last_year)[0].isoformat()
    [limit] = then["limits"]
    assert (limit["used"], limit["resets_at"]) == (0, window("day", last_year)[1].isoformat())
    assert limit["assistants"] == ["helper"]
