"""What each scope used in each calendar period: the rows usage limits are checked against."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from ._money import UNPRICED, cost_field

# The built-in scopes of usage limits as staff read them ("user 7", "the site"); a site-defined scope keeps its name.
USAGE_SCOPE_LABELS = {
    "user": pgettext_lazy("toolcalling usage scope", "user"),
    "assistant": pgettext_lazy("toolcalling usage scope", "assistant"),
    "site": pgettext_lazy("toolcalling usage scope", "site"),
}


class UsageCounter(models.Model):
    """What one scope (a user, an assistant, the site, a tenant) used in one calendar period: the rows usage
    limits are checked against. Turns add to them with ``F()`` increments, so every process counts into one row."""

    class Period(models.TextChoices):
        HOUR = "hour", pgettext_lazy("toolcalling model", "Hour")
        DAY = "day", pgettext_lazy("toolcalling model", "Day")
        MONTH = "month", pgettext_lazy("toolcalling model", "Month")

    id = models.BigAutoField(primary_key=True)
    scope = models.CharField(
        max_length=200,
        verbose_name=pgettext_lazy("toolcalling model", "scope"),
        help_text=_("user, assistant, site, or the name of a site-defined scope such as a tenant."),
    )
    key = models.CharField(
        max_length=200,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "key"),
        help_text=_("Who in the scope: the user's id, the assistant's id, the tenant's key; empty for the site."),
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=pgettext_lazy("toolcalling model", "user"),
        help_text=_("The user, on rows of the user scope."),
    )
    period = models.CharField(
        max_length=10, choices=Period.choices, verbose_name=pgettext_lazy("toolcalling model", "period")
    )
    period_start = models.DateTimeField(
        verbose_name=pgettext_lazy("toolcalling model", "period start"),
        help_text=_("The start of the calendar period, in the site's time zone."),
    )
    tokens = models.PositiveBigIntegerField(default=0, verbose_name=pgettext_lazy("toolcalling model", "tokens"))
    turns = models.PositiveBigIntegerField(default=0, verbose_name=pgettext_lazy("toolcalling model", "turns"))
    tool_calls = models.PositiveBigIntegerField(
        default=0, verbose_name=pgettext_lazy("toolcalling model", "tool calls")
    )
    cost = cost_field(_("What the priced model answers cost, in TOOLCALLING's CURRENCY."), default=0)
    unpriced_replies = models.PositiveBigIntegerField(
        default=0, verbose_name=pgettext_lazy("toolcalling model", "unpriced answers"), help_text=UNPRICED
    )
    unknown_usage = models.PositiveBigIntegerField(
        default=0,
        verbose_name=pgettext_lazy("toolcalling model", "answers of unknown usage"),
        help_text=_(
            "Model answers whose endpoint reported no usage or a malformed one (counted in unpriced answers too): "
            'under UNKNOWN_USAGE = "stop" a token or cost limit of this period has no room while there are any.'
        ),
    )
    updated_at = models.DateTimeField(
        null=True, blank=True, verbose_name=pgettext_lazy("toolcalling model", "updated at")
    )

    class Meta:
        verbose_name = pgettext_lazy("toolcalling model", "usage counter")
        verbose_name_plural = pgettext_lazy("toolcalling model", "usage counters")
        ordering = ["-period_start", "-tokens"]
        constraints = [
            models.UniqueConstraint(fields=["scope", "key", "period", "period_start"], name="toolcalling_usage_unique")
        ]
        indexes = [models.Index(fields=["period", "period_start", "scope"], name="toolcalling_usage_period_idx")]

    def __str__(self) -> str:
        scope = USAGE_SCOPE_LABELS.get(self.scope, self.scope)
        who = f"{scope} {self.key}" if self.key else str(scope)
        return _("%(who)s: %(period)s from %(start)s") % {
            "who": who,
            "period": self.get_period_display(),
            "start": f"{self.period_start:%Y-%m-%d %H:%M}",
        }
