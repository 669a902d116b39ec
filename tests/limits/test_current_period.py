"""The counters of the current period as the admin lists them (biggest spenders first, then by key), as of now
or of another moment; and an hour's end in the site's time zone."""

import datetime

from django.test import override_settings
from django.utils import timezone

from toolcalling.models import UsageCounter
from toolcalling.usage import current, window


def counter(key, tokens, moment):
    return UsageCounter.objects.create(
        scope="assistant", key=key, period="day", period_start=window("day", moment)[0], tokens=tokens,
        updated_at=moment,
    )  # fmt: skip


def test_the_current_periods_counters_biggest_first_then_by_key(db):
    now = timezone.now()
    last_week = now - datetime.timedelta(days=7)
    counter("helper", 50, now), counter("budget", 50, now), counter("slow", 90, now)
    counter("helper", 999, last_week)
    assert [(c.key, c.tokens) for c in current("assistant", "day", now)] == [
        ("slow", 90),
        ("budget", 50),
        ("helper", 50),
    ]
    assert [(c.key, c.tokens) for c in current("assistant", "day", last_week)] == [("helper", 999)]
    assert list(current("user", "day", now)) == [] and list(current("assistant", "month", now)) == []


@override_settings(TIME_ZONE="Europe/Berlin")
def test_an_hour_ends_in_the_sites_time_zone():
    start, end = window("hour", datetime.datetime(2026, 1, 15, 10, 20, tzinfo=datetime.UTC))
    assert (start.isoformat(), end.isoformat()) == ("2026-01-15T11:00:00+01:00", "2026-01-15T12:00:00+01:00")


@override_settings(TIME_ZONE="Europe/Berlin")
def test_a_period_is_the_sites_whatever_time_zone_a_request_activated():
    # 00:30 on the 16th in Berlin, still the 15th in New York: a site that activates each user's own zone (a
    # common middleware) must not count their turns in rows of another day than everyone else's.
    moment = datetime.datetime(2026, 1, 15, 23, 30, tzinfo=datetime.UTC)
    site = {period: window(period, moment) for period in ("hour", "day", "month")}
    with timezone.override("America/New_York"):
        assert {period: window(period, moment) for period in site} == site
    assert site["day"][0].isoformat() == "2026-01-16T00:00:00+01:00"


def test_on_the_first_of_a_month_the_days_counters_are_not_mixed_with_the_months_starting_then_too(db):
    first = timezone.make_aware(datetime.datetime(2026, 3, 1, 0, 30))  # a day, a month and an hour start at 00:00
    for period, tokens in (("day", 10), ("month", 500), ("hour", 3)):
        UsageCounter.objects.create(
            scope="assistant", key="helper", period=period, period_start=window(period, first)[0], tokens=tokens
        )
    assert window("day", first)[0] == window("month", first)[0] == window("hour", first)[0]
    assert [(c.period, c.tokens) for c in current("assistant", "day", first)] == [("day", 10)]
    assert [(c.period, c.tokens) for c in current("assistant", "month", first)] == [("month", 500)]
