"""Usage limits are checked when they are written: settings by a system check, assistants when the class is
defined; and their periods are calendar periods in the site's time zone."""

import datetime

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from toolcalling import Assistant
from toolcalling.checks import check_usage_limits
from toolcalling.exceptions import ImproperlyDefined
from toolcalling.testutils import override_toolcalling
from toolcalling.toolkit import assistants
from toolcalling.usage import UsageLimit, parse_limits, site_limits, window

UTC = datetime.UTC


def tenant_of(ctx):
    return ctx.extra.get("tenant")


def test_a_limit_reads_as_written():
    limits = parse_limits(
        [
            {"tokens": 200_000, "per": "user", "period": "day"},
            {"turns": 50, "per": "assistant", "period": "hour"},
            {"tool_calls": 10, "per": tenant_of, "period": "month", "name": "tenant"},
            {"tokens": 5_000_000, "per": "site", "period": "month"},
        ],
        "test",
    )
    assert [(lim.quantity, lim.maximum, lim.scope, lim.period) for lim in limits] == [
        ("tokens", 200_000, "user", "day"),
        ("turns", 50, "assistant", "hour"),
        ("tool_calls", 10, "tenant", "month"),
        ("tokens", 5_000_000, "site", "month"),
    ]
    unnamed = parse_limits([{"tokens": 1, "per": tenant_of, "period": "day"}], "test")[0]
    assert unnamed.scope == f"{__name__}.tenant_of"  # a callable's counters are kept under its dotted path


def test_every_problem_is_reported_at_once():
    with pytest.raises(ImproperlyDefined) as caught:
        parse_limits(
            [
                {"tokens": 0, "per": "user", "period": "day"},
                {"tokens": 5, "turns": 3, "per": "user", "period": "day"},
                {"tokens": 5, "per": "everyone", "period": "week", "colour": "red"},
                {"tokens": 5, "per": "user", "period": "day", "name": "x"},
                "200k tokens a day",
            ],
            'TOOLCALLING["USAGE_LIMITS"]',
        )
    message = str(caught.value)
    assert message.startswith('TOOLCALLING["USAGE_LIMITS"] cannot be used: limit 0')
    assert "'tokens' must be a positive whole number, not 0" in message
    assert "give exactly one of 'tokens', 'turns', 'tool_calls'" in message
    assert "'per' must be one of 'user', 'assistant', 'site' or a callable (ctx) -> key, not 'everyone'" in message
    assert "'period' must be one of 'hour', 'day', 'month', not 'week'" in message
    assert "unknown key(s) 'colour'" in message
    assert "'name' names a callable scope" in message
    assert "limit 4 ('200k tokens a day'): a limit is a dict" in message
    with pytest.raises(ImproperlyDefined, match="must be a list of limits"):
        parse_limits({"tokens": 5, "per": "user", "period": "day"}, "test")


def test_an_assistant_with_a_bad_limit_is_refused_when_it_is_defined():
    with pytest.raises(ImproperlyDefined, match=r"Greedy': usage_limits cannot be used: .*'period' must be one of"):

        class Greedy(Assistant):
            id = "greedy"
            usage_limits = [{"tokens": 100, "per": "user", "period": "fortnight"}]

    assert not assistants.is_registered("greedy")


def test_the_system_check_reports_bad_settings():
    with override_toolcalling(USAGE_LIMITS=[{"tokens": -1, "per": "user", "period": "day"}]):
        errors = check_usage_limits()
        with pytest.raises(ImproperlyConfigured, match="positive whole number"):
            site_limits()  # and a process that skipped the checks fails on first use, not quietly
    assert [e.id for e in errors] == ["toolcalling.E005"]
    assert "'tokens' must be a positive whole number, not -1" in errors[0].msg
    with override_toolcalling(USAGE_LIMITS=[{"tokens": 10, "per": "user", "period": "day"}]):
        assert check_usage_limits() == []
        assert site_limits() == [UsageLimit(quantity="tokens", maximum=10, per="user", period="day")]


@override_settings(TIME_ZONE="Europe/Berlin")
def test_periods_are_calendar_periods_in_the_sites_time_zone():
    now = datetime.datetime(2025, 3, 30, 12, 34, 56, tzinfo=UTC)  # the day Berlin moves its clocks forward
    day_start, day_end = window("day", now)
    assert (day_start.astimezone(UTC), day_end.astimezone(UTC)) == (
        datetime.datetime(2025, 3, 29, 23, 0, tzinfo=UTC),  # local midnight, winter time
        datetime.datetime(2025, 3, 30, 22, 0, tzinfo=UTC),  # the next local midnight, summer time: a 23-hour day
    )
    month_start, month_end = window("month", now)
    assert (month_start.astimezone(UTC), month_end.astimezone(UTC)) == (
        datetime.datetime(2025, 2, 28, 23, 0, tzinfo=UTC),
        datetime.datetime(2025, 3, 31, 22, 0, tzinfo=UTC),
    )
    hour_start, hour_end = window("hour", now)
    assert (hour_start.astimezone(UTC), hour_end.astimezone(UTC)) == (
        datetime.datetime(2025, 3, 30, 12, 0, tzinfo=UTC),
        datetime.datetime(2025, 3, 30, 13, 0, tzinfo=UTC),
    )
    december = datetime.datetime(2025, 12, 31, 23, 30, tzinfo=UTC)  # already January 1st in Berlin
    assert window("month", december)[0].astimezone(UTC) == datetime.datetime(2025, 12, 31, 23, 0, tzinfo=UTC)
    assert window("day", december)[1].astimezone(UTC) == datetime.datetime(2026, 1, 1, 23, 0, tzinfo=UTC)


def test_limits_an_assistant_gives_each_user_apply_to_that_user_and_bad_ones_name_the_assistant(alice, bob):
    from toolcalling.usage import Meter

    class Tiered(Assistant):
        id = "tiered-limits-test"

        def get_usage_limits(self, ctx):
            if ctx.user == bob:
                return [{"turns": 1, "per": "user", "period": "day"}]
            if ctx.user.username == "mallory":
                return [{"turns": 1, "per": "user", "period": "fortnight"}]  # wrong only for this user
            return []

    try:
        assistant = Tiered()
        assert Meter.build(assistant, assistant.build_context(alice)).limits == []
        [(limit, key)] = Meter.build(assistant, assistant.build_context(bob)).limits
        assert (limit.quantity, limit.maximum, key) == ("turns", 1, str(bob.pk))
        alice.username = "mallory"
        with pytest.raises(ImproperlyDefined) as caught:
            Meter.build(assistant, assistant.build_context(alice))
        assert "<locals>.Tiered.usage_limits cannot be used: limit 0 (" in str(caught.value)  # its __qualname__
    finally:
        assistants.unregister(Tiered.id)


def test_a_meter_counts_the_user_in_the_users_rows_only_and_prices_at_the_assistants_own_api(alice):
    from toolcalling.usage import Meter

    class Elsewhere(Assistant):  # gpt-4o over Anthropic's API: genai-prices has it at OpenAI only
        id = "elsewhere-limits-test"
        model = "gpt-4o"
        api = "anthropic"
        usage_limits = [{"cost": "1.00", "per": "site", "period": "day"}]

    try:
        assistant = Elsewhere()
        with override_toolcalling(BASE_URL=None, API_KEY="k"):
            meter = Meter.build(assistant, assistant.build_context(alice))
        users = {(c.scope, c.user_id) for c in meter.counted}
        assert users == {("user", alice.pk), ("assistant", None), ("site", None)}  # the admin filters rows by user
        assert meter.unpriced_model == "gpt-4o"  # so its turns are refused, not counted as free
    finally:
        assistants.unregister(Elsewhere.id)


def test_limits_given_as_objects_are_kept_as_they_are_and_the_dicts_after_them_read_too():
    given = UsageLimit(quantity="turns", maximum=3, per="user", period="day")
    first, second = parse_limits([given, {"tokens": 5, "per": "site", "period": "hour"}], "test")
    assert first is given
    assert (second.quantity, second.maximum, second.per, second.period) == ("tokens", 5, "site", "hour")


def test_the_problems_of_a_list_of_limits_are_told_one_after_another():
    with pytest.raises(ImproperlyDefined) as caught:
        parse_limits(
            [{"tokens": 0, "per": "user", "period": "day"}, {"tokens": 5, "per": "user", "period": "week"}], "X"
        )
    assert str(caught.value) == (
        "X cannot be used: limit 0 ({'tokens': 0, 'per': 'user', 'period': 'day'}): 'tokens' must be a positive whole"
        " number, not 0; limit 1 ({'tokens': 5, 'per': 'user', 'period': 'week'}): 'period' must be one of 'hour',"
        " 'day', 'month', not 'week'."
    )
