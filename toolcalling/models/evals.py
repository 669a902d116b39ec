"""Eval runs of ``manage.py toolcalling_eval`` and the results of their cases."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


class EvalRun(models.Model):
    """One run of ``manage.py toolcalling_eval``: its dataset, model and pass rate; its cases are rows of
    ``EvalCaseResult``. The cases' own conversations were rolled back; these rows are what is left of them."""

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(
        max_length=200,
        verbose_name=pgettext_lazy("toolcalling model", "name"),
        help_text=pgettext_lazy("toolcalling model", "The dataset's name."),
    )
    dataset = models.CharField(
        max_length=500,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "dataset"),
        help_text=_("The file or dotted path it was read from."),
    )
    assistant_id = models.CharField(
        max_length=100,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "assistant"),
        help_text=_("The --assistant given, if any."),
    )
    model = models.CharField(
        max_length=200,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "model"),
        help_text=_("The --model given, if any."),
    )
    cases = models.PositiveIntegerField(default=0, verbose_name=pgettext_lazy("toolcalling model", "case runs"))
    passed = models.PositiveIntegerField(default=0, verbose_name=pgettext_lazy("toolcalling model", "passed"))
    pass_rate = models.FloatField(default=0.0, verbose_name=pgettext_lazy("toolcalling model", "pass rate"))
    tokens = models.PositiveBigIntegerField(default=0, verbose_name=pgettext_lazy("toolcalling model", "tokens"))
    cost = models.DecimalField(
        max_digits=14, decimal_places=6, null=True, blank=True, verbose_name=pgettext_lazy("toolcalling model", "cost"),
        help_text=_("The cases' cost, when the site prices its model."),
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=pgettext_lazy("toolcalling model", "created at"))

    class Meta:
        verbose_name = pgettext_lazy("toolcalling model", "eval run")
        verbose_name_plural = pgettext_lazy("toolcalling model", "eval runs")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return _("%(name)s #%(id)s: %(passed)s/%(cases)s passed") % {
            "name": self.name,
            "id": self.pk,
            "passed": self.passed,
            "cases": self.cases,
        }


class EvalCaseResult(models.Model):
    """One case run of an eval run: passed or not, its score, the tools it called and why it failed."""

    id = models.BigAutoField(primary_key=True)
    run = models.ForeignKey(
        EvalRun,
        on_delete=models.CASCADE,
        related_name="results",
        verbose_name=pgettext_lazy("toolcalling model", "eval run"),
    )
    name = models.CharField(
        max_length=300,
        verbose_name=pgettext_lazy("toolcalling model", "name"),
        help_text=_("The case run, e.g. 'status [2/3]'."),
    )
    case = models.CharField(max_length=300, verbose_name=pgettext_lazy("toolcalling model", "case"))
    passed = models.BooleanField(default=False, verbose_name=pgettext_lazy("toolcalling model", "passed"))
    score = models.FloatField(default=0.0, verbose_name=pgettext_lazy("toolcalling model", "score"))
    tool_calls = models.JSONField(
        default=list, blank=True, verbose_name=pgettext_lazy("toolcalling model", "tool calls")
    )
    tokens = models.PositiveBigIntegerField(default=0, verbose_name=pgettext_lazy("toolcalling model", "tokens"))
    cost = models.DecimalField(
        max_digits=14, decimal_places=6, null=True, blank=True, verbose_name=pgettext_lazy("toolcalling model", "cost")
    )
    seconds = models.FloatField(default=0.0, verbose_name=pgettext_lazy("toolcalling model", "seconds"))
    failures = models.JSONField(default=list, blank=True, verbose_name=pgettext_lazy("toolcalling model", "failures"))
    reply = models.TextField(blank=True, verbose_name=pgettext_lazy("toolcalling model", "answer"))

    class Meta:
        verbose_name = pgettext_lazy("toolcalling model", "eval case result")
        verbose_name_plural = pgettext_lazy("toolcalling model", "eval case results")
        ordering = ["run", "id"]
        indexes = [models.Index(fields=["run", "case"], name="toolcalling_evalcase_idx")]

    def __str__(self) -> str:
        return self.name
