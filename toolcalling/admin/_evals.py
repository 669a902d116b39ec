"""Admin of eval runs: each run with its case results, a page comparing two runs, and "add to dataset" on
conversations (cases written from them)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext, pgettext_lazy

from ..conf import toolcalling_settings
from ..evals.cases import append_cases, case_from_conversation, cases_yaml
from ..models import Conversation, EvalCaseResult, EvalRun
from ._conversations import ReadOnlyInline


class EvalCaseResultInline(ReadOnlyInline):
    model = EvalCaseResult
    fields = readonly_fields = ("name", "passed", "score", "tool_calls", "tokens", "cost", "seconds", "failures")


@admin.register(EvalRun)
class EvalRunAdmin(admin.ModelAdmin):
    list_display = ["__str__", "dataset", "model", "pass_rate_display", "tokens", "cost", "created_at"]
    list_filter = ["name", "model", "created_at"]
    search_fields = ["name", "dataset", "model"]
    readonly_fields = ["name", "dataset", "assistant_id", "model", "cases", "passed", "pass_rate", "tokens", "cost",
                       "created_at"]  # fmt: skip
    inlines = [EvalCaseResultInline]
    actions = ["compare_runs"]

    @admin.display(description=pgettext_lazy("toolcalling admin", "pass rate"), ordering="pass_rate")
    def pass_rate_display(self, obj: EvalRun) -> str:
        return f"{obj.pass_rate:.0%}"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # runs come from manage.py toolcalling_eval

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description=gettext_lazy("Compare the two selected runs"))
    def compare_runs(self, request: HttpRequest, queryset: QuerySet[EvalRun]) -> HttpResponse | None:
        runs = list(queryset.order_by("created_at", "id")[:3])
        if len(runs) != 2:
            self.message_user(request, _("Select exactly two runs to compare."), messages.WARNING)
            return None
        url = reverse("admin:toolcalling_evalrun_compare", args=[runs[0].pk, runs[1].pk])
        return HttpResponseRedirect(url)

    def get_urls(self) -> list[URLPattern]:
        compare = path(
            "compare/<int:first>/<int:second>/",
            self.admin_site.admin_view(self.compare_view),
            name="toolcalling_evalrun_compare",
        )
        return [compare, *super().get_urls()]

    def compare_view(self, request: HttpRequest, first: int, second: int) -> HttpResponse:
        """Case by case: how often each passed in either run, and whether it got better or worse."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        before, after = get_object_or_404(EvalRun, pk=first), get_object_or_404(EvalRun, pk=second)
        context = {
            **self.admin_site.each_context(request),
            "title": pgettext("toolcalling admin", "Compare eval runs"),
            "opts": self.model._meta,
            "before": before,
            "after": after,
            "rows": compare(before, after),
        }
        return TemplateResponse(request, "admin/toolcalling/evalrun/compare.html", context)


def _rates(run: EvalRun) -> dict[str, tuple[int, int, float]]:
    """``{case: (runs passed, runs, mean score)}`` of one run."""
    found: dict[str, list[tuple[bool, float]]] = {}
    for case, passed, score in run.results.order_by("id").values_list("case", "passed", "score"):
        found.setdefault(case, []).append((passed, score))
    return {c: (sum(p for p, _ in r), len(r), sum(s for _, s in r) / len(r)) for c, r in found.items()}


def compare(before: EvalRun, after: EvalRun) -> list[dict[str, Any]]:
    """One row per case of either run: its pass rate and score in each, and the change."""
    old, new = _rates(before), _rates(after)
    rows = []
    for case in [*old, *(c for c in new if c not in old)]:
        a, b = old.get(case), new.get(case)
        if a is None or b is None:
            change = pgettext("toolcalling admin", "new") if a is None else pgettext("toolcalling admin", "removed")
        else:
            delta = b[0] / b[1] - a[0] / a[1]
            change = (
                pgettext("toolcalling admin", "better")
                if delta > 0
                else pgettext("toolcalling admin", "worse")
                if delta < 0
                else pgettext("toolcalling admin", "same")
            )
        rows.append({"case": case, "before": a, "after": b, "change": change})
    return rows


@admin.action(description=gettext_lazy("Add to the eval dataset"), permissions=["change"])
def add_to_dataset(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Conversation]
) -> HttpResponse | None:
    """Write a case per selected conversation: into ``TOOLCALLING["EVAL_DATASET"]`` when set, else as a
    download."""
    cases = [case_from_conversation(c) for c in queryset.select_related("user").order_by("created_at")]
    target = toolcalling_settings.EVAL_DATASET
    if not target:
        response = HttpResponse(cases_yaml(cases), content_type="application/yaml; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="cases.yaml"'
        return response
    total = append_cases(target, cases)
    modeladmin.message_user(
        request,
        _("%(added)d cases written to %(path)s, which now holds %(total)d.")
        % {"added": len(cases), "path": target, "total": total},
        messages.SUCCESS,
    )
    return None
