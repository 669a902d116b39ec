"""Usage limits as a site writes them — ``{"tokens": 200_000, "per": "user", "period": "day"}`` — checked for
mistakes once, and the calendar periods they count in."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from ..conf import toolcalling_settings
from ..exceptions import ImproperlyDefined

if TYPE_CHECKING:
    from ..toolkit import ToolContext

QUANTITIES = ("tokens", "turns", "tool_calls", "cost")
PERIODS = ("hour", "day", "month")
SCOPES = ("user", "assistant", "site")
KEYS = {*QUANTITIES, "per", "period", "name"}

ScopeFunction = Callable[["ToolContext"], Any]


@dataclass(frozen=True, kw_only=True)
class UsageLimit:
    """At most ``maximum`` of ``quantity`` per calendar ``period``, counted for each ``per``: the user, the
    assistant, the whole site, or the key a callable ``(ctx) -> key`` returns (a tenant, say)."""

    quantity: str
    """``"tokens"`` (of model calls), ``"turns"`` (messages a user sends), ``"tool_calls"`` (the model asked for)
    or ``"cost"`` (of the model's answers, in ``TOOLCALLING["CURRENCY"]``)."""
    maximum: int | Decimal
    """A whole number; for ``cost`` a ``Decimal``."""
    per: str | ScopeFunction
    period: str
    """``"hour"``, ``"day"`` or ``"month"``: calendar periods in the site's ``TIME_ZONE``."""
    name: str = ""
    """The name a callable scope's counters are kept under (default: the callable's dotted path)."""

    @property
    def scope(self) -> str:
        """The scope's name on the counters: ``user``, ``assistant``, ``site``, or the callable's name."""
        if isinstance(self.per, str):
            return self.per
        return self.name or f"{self.per.__module__}.{self.per.__qualname__}"

    def describe(self) -> dict[str, Any]:
        """The limit as the API shows it."""
        return {"quantity": self.quantity, "maximum": shown(self.maximum), "per": self.scope, "period": self.period}


def parse_limits(value: Any, where: str) -> list[UsageLimit]:
    """The limits of a ``USAGE_LIMITS``-style list; every problem with it is reported at once, naming ``where``."""
    if not isinstance(value, list | tuple):
        raise ImproperlyDefined(f"{where} must be a list of limits such as "
                                f'{{"tokens": 200_000, "per": "user", "period": "day"}}, not {value!r}.')  # fmt: skip
    limits, problems = [], []
    for index, item in enumerate(value):
        if isinstance(item, UsageLimit):
            limits.append(item)
            continue
        found = _problems(item)
        if found:
            problems += [f"limit {index} ({item!r}): {problem}" for problem in found]
            continue
        quantity = next(q for q in QUANTITIES if q in item)
        maximum = Decimal(item[quantity]) if quantity == "cost" else item[quantity]
        limits.append(UsageLimit(quantity=quantity, maximum=maximum, per=item["per"], period=item["period"],
                                 name=item.get("name", "")))  # fmt: skip
    if problems:
        raise ImproperlyDefined(f"{where} cannot be used: " + "; ".join(problems) + ".")
    return limits


def _problems(item: Any) -> list[str]:
    if not isinstance(item, dict):
        return ['a limit is a dict such as {"tokens": 200_000, "per": "user", "period": "day"}']
    problems = []
    unknown = sorted(set(item) - KEYS, key=str)
    if unknown:
        problems.append(f"unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(KEYS))}")
    quantities = [q for q in QUANTITIES if q in item]
    if len(quantities) != 1:
        problems.append(f"give exactly one of {', '.join(map(repr, QUANTITIES))} with the number allowed")
    for quantity in quantities:
        number = item[quantity]
        if quantity == "cost":
            if not _positive_money(number):
                problems.append(
                    f"'cost' must be a positive amount in TOOLCALLING['CURRENCY'] as a string or Decimal, such as "
                    f'"5.00" (never a float, which cannot hold every amount exactly), not {number!r}'
                )
        elif not isinstance(number, int) or isinstance(number, bool) or number < 1:
            problems.append(f"{quantity!r} must be a positive whole number, not {number!r}")
    per = item.get("per")
    if per not in SCOPES and not callable(per):
        problems.append(f"'per' must be one of {', '.join(map(repr, SCOPES))} or a callable (ctx) -> key, not {per!r}")
    if item.get("period") not in PERIODS:
        problems.append(f"'period' must be one of {', '.join(map(repr, PERIODS))}, not {item.get('period')!r}")
    name = item.get("name")
    if "name" in item and (not callable(per) or not isinstance(name, str) or not name or name in SCOPES):
        problems.append(
            "'name' names a callable scope: a non-empty string other than user, assistant and site, "
            "given only with a callable 'per'"
        )
    return problems


def _positive_money(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        return False
    try:
        amount = Decimal(value)
    except InvalidOperation:
        return False
    return amount.is_finite() and amount > 0


def shown(amount: int | Decimal) -> int | str:
    """An amount as the API shows it: a whole number, or a cost as a decimal string (as on messages)."""
    return f"{amount:f}" if isinstance(amount, Decimal) else amount


def site_limits() -> list[UsageLimit]:
    """``TOOLCALLING["USAGE_LIMITS"]``, parsed once per settings (the system check E005 reports mistakes)."""

    def build() -> list[UsageLimit]:
        try:
            return parse_limits(toolcalling_settings.USAGE_LIMITS, 'TOOLCALLING["USAGE_LIMITS"]')
        except ImproperlyDefined as exc:
            raise ImproperlyConfigured(str(exc)) from exc

    return toolcalling_settings.derived("usage_limits", build)


def window(period: str, now: datetime.datetime | None = None) -> tuple[datetime.datetime, datetime.datetime]:
    """The calendar period around ``now`` in the site's time zone: ``(start, end)``.

    Days start at local midnight and months on the 1st, whatever the daylight saving time in between, so every
    process that counts at the same moment finds the same period start, and so the same counter row.
    """
    now = now or timezone.now()
    # The site's zone, not the one a request may have activated: every turn of a moment counts in the same rows.
    local = timezone.localtime(now, timezone.get_default_timezone()) if settings.USE_TZ else now
    if period == "hour":
        start = local.replace(minute=0, second=0, microsecond=0)
        # An hour is an hour of elapsed time, also in the hour the clocks change.
        end = _elapsed(start, datetime.timedelta(hours=1))
        return start, end
    if period == "day":
        day = local.date()
        return _midnight(day, local), _midnight(day + datetime.timedelta(days=1), local)
    if period == "month":
        first = local.date().replace(day=1)
        following = (first + datetime.timedelta(days=32)).replace(day=1)
        return _midnight(first, local), _midnight(following, local)
    raise ValueError(f"Unknown period {period!r}; one of {', '.join(PERIODS)}.")


def _midnight(day: datetime.date, like: datetime.datetime) -> datetime.datetime:
    return datetime.datetime.combine(day, datetime.time(0), tzinfo=like.tzinfo)


def _elapsed(start: datetime.datetime, delta: datetime.timedelta) -> datetime.datetime:
    if start.tzinfo is None:
        return start + delta
    return (start.astimezone(datetime.UTC) + delta).astimezone(start.tzinfo)
