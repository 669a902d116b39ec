"""What usage is shown: a user's own usage, costs and limits (``GET usage/``) and the rows of the current period
for the admin."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet
from django.utils import timezone

from ..conf import toolcalling_settings
from ._limits import UsageLimit, shown, window
from ._meter import Counted, Meter, counter_model, read_counters, room_unknown
from ._prices import COST_PLACES

if TYPE_CHECKING:
    from ..models import UsageCounter
    from ..toolkit import AssistantLike

SHOWN_PERIODS = ("day", "month")  # counted for every user whatever the limits (see ALWAYS_COUNTED)


def report(user: Any, assistants: Iterable[AssistantLike], now: datetime.datetime | None = None) -> dict[str, Any]:
    """The user's usage in the current day and month, and every limit that applies to their turns with
    ``assistants`` (the ones they may use), with how much of it is used. Two queries, whatever the limits."""
    now = now or timezone.now()
    applying: dict[tuple[UsageLimit, str], list[str]] = {}
    for assistant in assistants:
        meter = Meter.build(assistant, assistant.build_context(user, None))
        for limit, key in meter.limits:
            ids = applying.setdefault((limit, key), [])
            if assistant.id not in ids:  # the same limit in the settings and on the assistant is one limit
                ids.append(assistant.id or "")
    own = {period: Counted("user", str(user.pk), period).row(now) for period in SHOWN_PERIODS}
    rows = {(limit, key): Counted(limit.scope, key, limit.period).row(now) for limit, key in applying}
    used = read_counters([*own.values(), *rows.values()])
    usage = {}
    for period, row in own.items():
        counters = used.get(row, {})
        usage[period] = {
            **_period(period, now),
            **{quantity: counters.get(quantity, 0) for quantity in ("tokens", "turns", "tool_calls")},
            # A decimal string, as on messages; answers whose model has no price are counted beside it, and so
            # are answers whose usage is unknown (among them, the ones counted apart too).
            "cost": money(counters.get("cost")),
            "unpriced_replies": counters.get("unpriced", 0),
            "unknown_usage_replies": counters.get("unknown", 0),
        }
    limits = []
    for (limit, key), assistant_ids in applying.items():
        zero = Decimal(0) if limit.quantity == "cost" else 0  # a cost shows as a decimal string, also when 0
        counters = used.get(rows[(limit, key)], {})
        amount = counters.get(limit.quantity, zero)
        blind = room_unknown(limit, counters)  # no room while what an answer used is unknown
        limits.append({
            **limit.describe(),
            "used": shown(amount),
            "remaining": shown(zero if blind else max(zero, limit.maximum - amount)),
            "exceeded": blind or amount >= limit.maximum,
            **_period(limit.period, now),
            "assistants": assistant_ids,
        })  # fmt: skip
    return {"currency": toolcalling_settings.CURRENCY, "usage": usage, "limits": limits}


def money(amount: Decimal | None) -> str:
    """A cost as the API shows it: a decimal string with the places the database keeps."""
    return f"{(amount or Decimal(0)).quantize(COST_PLACES):f}"


def _period(period: str, now: datetime.datetime) -> dict[str, str]:
    start, end = window(period, now)
    return {"period_start": start.isoformat(), "resets_at": end.isoformat()}


def current(scope: str, period: str, now: datetime.datetime | None = None) -> QuerySet[UsageCounter]:
    """The counters of ``scope`` (``user``, ``assistant`` …) in the current ``period``, biggest spenders first."""
    start = window(period, now)[0]
    return counter_model().objects.filter(scope=scope, period=period, period_start=start).order_by("-tokens", "key")
