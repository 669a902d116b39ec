"""The admin's spend page: cost per day per assistant over the last 30 days as a chart drawn on the server (inline
SVG, no script), the users who spent most, and the same days as CSV. Read from the daily usage counters, which
every turn keeps whatever the limits (a few hundred rows, never the messages)."""

from __future__ import annotations

import csv
import datetime
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.translation import gettext as _

from .. import usage
from ..conf import toolcalling_settings
from ..exceptions import NotRegistered
from ..models import UsageCounter
from ..toolkit import assistants

DAYS = 30
TOP_USERS = 20
# The chart's box and bars, in SVG user units (it scales to the page's width).
WIDTH, HEIGHT, LEFT, BOTTOM, TOP_GAP = 760, 260, 70, 30, 10
COLOURS = ("#417690", "#e08e0b", "#3c8d40", "#ba2121", "#7b4ea3", "#1d8a99", "#b5651d", "#5f6b73")


@dataclass
class Spend:
    """The last ``DAYS`` days: per day and assistant what was spent, in the site's currency."""

    days: list[datetime.datetime]
    """The days' starts (local midnight), oldest first."""
    costs: dict[str, dict[datetime.datetime, Decimal]] = field(default_factory=dict)
    """Per assistant id, the cost of each day it was used."""
    unpriced: int = 0
    """Answers in these days whose model had no price: not in any cost shown."""
    rows: list[UsageCounter] = field(default_factory=list)

    @property
    def total(self) -> Decimal:
        return sum((sum(days.values(), Decimal(0)) for days in self.costs.values()), Decimal(0))


def last_days(now: datetime.datetime | None = None) -> list[datetime.datetime]:
    """The starts of the last ``DAYS`` calendar days in the site's time zone, today last."""
    now = now or timezone.now()
    today = timezone.localdate(now) if settings.USE_TZ else now.date()
    starts = []
    for back in range(DAYS - 1, -1, -1):
        noon = datetime.datetime.combine(today - datetime.timedelta(days=back), datetime.time(12))
        starts.append(usage.window("day", timezone.make_aware(noon) if settings.USE_TZ else noon)[0])
    return starts


def day_of(start: datetime.datetime) -> str:
    return f"{timezone.localtime(start) if settings.USE_TZ else start:%Y-%m-%d}"


def spend(now: datetime.datetime | None = None) -> Spend:
    """Read the assistants' daily counters of the last ``DAYS`` days (one query)."""
    days = last_days(now)
    found = Spend(days=days)
    wanted = set(days)
    rows = UsageCounter.objects.filter(scope="assistant", period="day", period_start__gte=days[0])
    for row in rows.order_by("period_start", "key"):
        if row.period_start not in wanted:
            continue
        found.rows.append(row)
        found.costs.setdefault(row.key, {})[row.period_start] = row.cost
        found.unpriced += row.unpriced_replies
    return found


def top_users(since: datetime.datetime, limit: int = TOP_USERS) -> list[dict[str, Any]]:
    """The users who spent most since ``since``, with their tokens and unpriced answers."""
    rows = (
        UsageCounter.objects.filter(scope="user", period="day", period_start__gte=since)
        .values("key")
        .annotate(cost=Sum("cost"), tokens=Sum("tokens"), turns=Sum("turns"), unpriced=Sum("unpriced_replies"))
        .order_by("-cost", "-tokens", "key")[:limit]
    )
    found = list(rows)
    User = get_user_model()
    names = {str(user.pk): user.get_username() for user in User.objects.filter(pk__in=[r["key"] for r in found])}
    return [{**row, "name": names.get(row["key"], row["key"]), "shown": shown(row["cost"])} for row in found]


def shown(cost: Decimal | None) -> str:
    """A cost without trailing zeros: ``0.25``, not ``0.2500000000``."""
    return f"{(cost or Decimal(0)).normalize():f}"


def assistant_name(assistant_id: str) -> str:
    try:
        return str(assistants.get(assistant_id).name)
    except NotRegistered:
        return assistant_id


def chart(found: Spend) -> dict[str, Any]:
    """The geometry of a stacked bar chart of ``found``: bars, axis ticks, day labels, and the legend."""
    per_day = [sum((days.get(day, Decimal(0)) for days in found.costs.values()), Decimal(0)) for day in found.days]
    peak = max(per_day, default=Decimal(0)) or Decimal(1)
    plot_width, plot_height = WIDTH - LEFT - 10, HEIGHT - BOTTOM - TOP_GAP
    slot = Decimal(plot_width) / len(found.days)
    currency = toolcalling_settings.CURRENCY
    series = []
    for index, assistant_id in enumerate(sorted(found.costs)):
        series.append(
            {"id": assistant_id, "name": assistant_name(assistant_id), "colour": COLOURS[index % len(COLOURS)]}
        )
    bars = []
    for position, day in enumerate(found.days):
        base = Decimal(HEIGHT - BOTTOM)
        for line in series:
            cost = found.costs[line["id"]].get(day, Decimal(0))
            if not cost:
                continue
            height = Decimal(plot_height) * cost / peak
            base -= height
            bars.append({
                "x": f"{LEFT + slot * position + slot / 10:.2f}", "y": f"{base:.2f}",
                "width": f"{slot * 8 / 10:.2f}", "height": f"{height:.2f}", "colour": line["colour"],
                "label": f"{day_of(day)} {line['name']}: {shown(cost)} {currency}",
            })  # fmt: skip
    ticks = []
    for share in (Decimal(0), Decimal("0.5"), Decimal(1)) if any(per_day) else (Decimal(0),):  # no scale for nothing
        ticks.append({"y": f"{HEIGHT - BOTTOM - plot_height * share:.2f}", "label": shown(peak * share)})
    last = len(found.days) - 1
    labels = [
        {"x": f"{LEFT + slot * position + slot / 2:.2f}", "text": f"{day:%m-%d}"}
        for position, day in enumerate(found.days)
        if position % 5 == last % 5
    ]
    return {
        "bars": bars,
        "ticks": ticks,
        "labels": labels,
        "series": series,
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "right": WIDTH - 10,
        "label_y": HEIGHT - 10,
    }


def csv_response(found: Spend) -> HttpResponse:
    """The days as CSV, one row per day and assistant, in the site's currency."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="spend-{day_of(found.days[-1])}.csv"'
    writer = csv.writer(response)
    writer.writerow(["day", "assistant", "cost", "currency", "tokens", "turns", "tool_calls", "unpriced_replies"])
    currency = toolcalling_settings.CURRENCY
    for row in found.rows:
        cost = shown(row.cost)
        writer.writerow([day_of(row.period_start), row.key, cost, currency, row.tokens, row.turns, row.tool_calls,
                         row.unpriced_replies])  # fmt: skip
    return response


def spend_context(request: HttpRequest, now: datetime.datetime | None = None) -> dict[str, Any] | HttpResponse:
    """What the page shows, or the CSV when ``?format=csv`` asks for it."""
    found = spend(now)
    if request.GET.get("format") == "csv":
        return csv_response(found)
    return {
        "title": _("Spend of the last %(days)d days") % {"days": DAYS},
        "chart": chart(found),
        "total": found.total,
        "total_shown": shown(found.total),
        "unpriced": found.unpriced,
        "currency": toolcalling_settings.CURRENCY,
        "users": top_users(found.days[0]),
        "days": DAYS,
        "first_day": found.days[0],
    }
