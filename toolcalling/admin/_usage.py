"""Usage in the admin: the counters the usage limits are checked against (read-only), a page with this
period's usage per user and per assistant, biggest spenders first, and the spend page (``_spend``)."""

from __future__ import annotations

from functools import reduce
from operator import or_
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet, Sum
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from .. import usage
from ..exceptions import NotRegistered
from ..models import USAGE_SCOPE_LABELS, UsageCounter
from ..toolkit import assistants
from ._spend import spend_context

TOP = 20  # rows per table on the summary page


class CurrentPeriodFilter(admin.SimpleListFilter):
    """Only the rows of the hour, day and month we are in: what the limits are checked against now."""

    title = pgettext_lazy("toolcalling admin", "period in progress")
    parameter_name = "current"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("yes", pgettext_lazy("toolcalling admin", "Current period"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[UsageCounter]) -> QuerySet[UsageCounter]:
        if self.value() != "yes":
            return queryset
        now = timezone.now()
        current = [Q(period=period, period_start=usage.window(period, now)[0]) for period in usage.PERIODS]
        return queryset.filter(reduce(or_, current))


class ScopeFilter(admin.SimpleListFilter):
    """The scopes counted so far, named in the staff's language (a site-defined scope by its own name)."""

    title = pgettext_lazy("toolcalling admin", "scope")
    parameter_name = "scope"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        scopes = UsageCounter.objects.order_by("scope").values_list("scope", flat=True).distinct()
        return [(scope, SCOPE_WORDS.get(scope, scope)) for scope in scopes]

    def queryset(self, request: HttpRequest, queryset: QuerySet[UsageCounter]) -> QuerySet[UsageCounter]:
        return queryset.filter(scope=self.value()) if self.value() else queryset


@admin.register(UsageCounter)
class UsageCounterAdmin(admin.ModelAdmin):
    """The counters, read-only; deleting one gives its scope a fresh start for the rest of the period."""

    list_display = ["who", "scope_shown", "period", "period_start", "tokens", "turns", "tool_calls", "updated_at"]
    list_filter = [CurrentPeriodFilter, "period", ScopeFilter]
    search_fields = ["key", "user__username"]
    list_select_related = ["user"]
    ordering = ["-period_start", "-tokens"]
    readonly_fields = [f.name if f.name != "scope" else "scope_shown" for f in UsageCounter._meta.fields]

    @admin.display(description=pgettext_lazy("toolcalling admin", "who"), ordering="key")
    def who(self, obj: UsageCounter) -> str:
        return describe(obj)

    @admin.display(description=pgettext_lazy("toolcalling admin", "scope"), ordering="scope")
    def scope_shown(self, obj: UsageCounter) -> str:
        return str(SCOPE_WORDS.get(obj.scope, obj.scope))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        summary = path(
            "summary/", self.admin_site.admin_view(self.summary_view), name="toolcalling_usagecounter_summary"
        )
        spending = path("spend/", self.admin_site.admin_view(self.spend_view), name="toolcalling_usagecounter_spend")
        return [summary, spending, *super().get_urls()]

    def spend_view(self, request: HttpRequest) -> HttpResponse:
        """Cost per day per assistant over the last 30 days, the top users, and a CSV of the days."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        shown = spend_context(request)
        if isinstance(shown, HttpResponse):
            return shown
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, **shown}
        return TemplateResponse(request, "admin/toolcalling/usagecounter/spend.html", context)

    def summary_view(self, request: HttpRequest) -> HttpResponse:
        """This day's and this month's usage per user (top spenders) and per assistant, and the site's limits."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        now = timezone.now()
        periods = []
        for period, label in (
            ("day", pgettext_lazy("toolcalling admin", "Today")),
            ("month", pgettext_lazy("toolcalling admin", "This month")),
        ):
            start, end = usage.window(period, now)
            users = usage.current("user", period, now)
            periods.append(
                {
                    "label": label,
                    "start": start,
                    "end": end,
                    "users": [(describe(row), row) for row in users.select_related("user")[:TOP]],
                    "user_count": users.count(),
                    "totals": users.aggregate(tokens=Sum("tokens"), turns=Sum("turns"), tool_calls=Sum("tool_calls")),
                    "assistants": [(describe(row), row) for row in usage.current("assistant", period, now)],
                }
            )
        context = {
            **self.admin_site.each_context(request),
            "title": pgettext_lazy("toolcalling admin", "Usage this period"),
            "opts": self.model._meta,
            "periods": periods,
            "limits": [describe_limit(limit) for limit in usage.site_limits()],
            "top": TOP,
        }
        return TemplateResponse(request, "admin/toolcalling/usagecounter/usage_summary.html", context)


# The words of a limit's keys, for staff: "5000 tokens per day, for each user".
QUANTITY_WORDS = {
    "tokens": pgettext_lazy("toolcalling admin", "tokens"),
    "turns": pgettext_lazy("toolcalling admin", "turns"),
    "tool_calls": pgettext_lazy("toolcalling admin", "tool calls"),
}
PERIOD_WORDS = {
    "hour": pgettext_lazy("toolcalling admin", "hour"),
    "day": pgettext_lazy("toolcalling admin", "day"),
    "month": pgettext_lazy("toolcalling admin", "month"),
}
SCOPE_WORDS = USAGE_SCOPE_LABELS


def describe_limit(limit: usage.UsageLimit) -> str:
    """One site-wide limit in a sentence; a site-defined scope (a tenant, say) is shown by its name."""
    return str(_("%(maximum)s %(quantity)s per %(period)s, for each %(per)s")) % {
        "maximum": limit.maximum,
        "quantity": QUANTITY_WORDS.get(limit.quantity, limit.quantity),
        "period": PERIOD_WORDS.get(limit.period, limit.period),
        "per": SCOPE_WORDS.get(limit.scope, limit.scope),
    }


def describe(row: UsageCounter) -> str:
    """Who a counter is for, as staff know them: the user's name, the assistant's name, "site" or the key."""
    if row.scope == "user" and row.user is not None:
        return row.user.get_username()
    if row.scope == "assistant":
        try:
            return str(assistants.get(row.key).name)
        except NotRegistered:
            return row.key
    if row.scope == "site":
        return str(pgettext_lazy("toolcalling admin", "the site"))
    return row.key
