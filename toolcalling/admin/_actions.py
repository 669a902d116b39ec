"""Admin actions on the tool call list: approve the selected calls, or reject them with a reason."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext, pgettext_lazy

from .. import approval
from ..exceptions import AlreadyDecided, DecisionNotAllowed, TaskQueueUnavailable
from ..models import ToolCall
from ._desk import report_approved

if TYPE_CHECKING:
    from ._tool_calls import ToolCallAdmin


@admin.action(description=_("Approve selected tool calls"), permissions=("approve",))
def approve_selected(modeladmin: ToolCallAdmin, request: HttpRequest, queryset: QuerySet[ToolCall]) -> None:
    """Approve each waiting call; workers run them and continue the conversations."""
    approved, skipped = [], []
    for call in queryset.select_related("conversation"):
        try:
            approval.approve(call, request.user)
        except (AlreadyDecided, DecisionNotAllowed, TaskQueueUnavailable) as exc:
            skipped.append(f"#{call.pk} {call.name}: {exc}")
        else:
            approved.append(call)
    for level, text in report_approved(approved):
        modeladmin.message_user(request, text, level)
    report(modeladmin, request, [], skipped)


@admin.action(description=_("Reject selected tool calls"), permissions=("approve",))
def reject_selected(
    modeladmin: ToolCallAdmin, request: HttpRequest, queryset: QuerySet[ToolCall]
) -> TemplateResponse | None:
    """Ask for a reason on an intermediate page (like ``delete_selected``), then reject each waiting call."""
    if request.POST.get("post") != "yes":
        opts = modeladmin.model._meta
        context = {
            **modeladmin.admin_site.each_context(request),
            "title": pgettext_lazy("toolcalling admin", "Reject tool calls"),
            "calls": queryset,
            "rows": [
                (call, json.dumps(call.arguments, indent=2, ensure_ascii=False))
                for call in queryset.select_related("conversation__user")
            ],
            "opts": opts,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "media": modeladmin.media,
        }
        request.current_app = modeladmin.admin_site.name
        return TemplateResponse(
            request, f"admin/{opts.app_label}/{opts.model_name}/reject_selected_confirmation.html", context
        )
    try:  # the one check of a decision's reason, as the API's and the chat's declines have
        reason = approval.validate_decision(reason=request.POST.get("reason", ""))[0]
    except ValidationError as exc:
        modeladmin.message_user(request, " ".join(exc.messages), messages.ERROR)
        return None
    rejected, skipped = [], []
    for call in queryset.select_related("conversation"):
        try:
            approval.reject(call, request.user, reason)
        except (AlreadyDecided, DecisionNotAllowed) as exc:
            skipped.append(f"#{call.pk} {call.name}: {exc}")
        else:
            rejected.append(call)
    text = ngettext(
        "Rejected %(count)d tool call; the model is told why.",
        "Rejected %(count)d tool calls; the model is told why.",
        len(rejected),
    )
    report(modeladmin, request, rejected, skipped, text)
    return None


def report(
    modeladmin: ToolCallAdmin, request: HttpRequest, done: list[ToolCall], skipped: list[str], text: str = ""
) -> None:
    if done:
        modeladmin.message_user(request, text % {"count": len(done)}, messages.SUCCESS)
    if skipped:
        modeladmin.message_user(
            request,
            pgettext_lazy("toolcalling admin", "Skipped: %(calls)s") % {"calls": "; ".join(skipped)},
            messages.WARNING,
        )
