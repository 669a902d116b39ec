"""The tool call list staff decide on, and the change form that edits a waiting call's arguments."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.timesince import timesince
from django.utils.translation import gettext_lazy as _

from .. import approval
from ..approval import can_approve
from ..exceptions import AlreadyDecided, InvalidArguments
from ..models import ToolCall
from ._actions import approve_selected, reject_selected
from ._conversations import pretty_json
from ._stats import tool_stats


class PrettyJSONField(forms.JSONField):
    """A JSON form field shown indented, so an approver can read and edit arguments."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, str):  # the text typed in, when the form is shown again with an error
            return value
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


class ToolCallArgumentsForm(forms.ModelForm):
    """The change form of a waiting call: only its arguments, checked against the tool's signature."""

    arguments = PrettyJSONField(
        widget=forms.Textarea(attrs={"rows": 12, "cols": 80, "style": "font-family:monospace"}),
        help_text=_("Edit before approving; the model is told the arguments were changed."),
    )

    class Meta:
        model = ToolCall
        fields = ["arguments"]

    def clean_arguments(self) -> dict[str, Any]:
        if self.instance.status != ToolCall.Status.AWAITING_APPROVAL:
            raise forms.ValidationError(_("This call is no longer waiting; its arguments cannot change."))
        try:
            return approval.validate_arguments(self.instance, self.cleaned_data["arguments"])
        except InvalidArguments as exc:
            raise forms.ValidationError(str(exc))


@admin.register(ToolCall)
class ToolCallAdmin(admin.ModelAdmin):
    """The list staff decide on: waiting calls with their tool, arguments, requester, conversation and age."""

    list_display = [
        "id",
        "name",
        "status",
        "arguments_display",
        "requesting_user",
        "conversation_link",
        "age",
        "decided_by",
    ]
    list_filter = [
        "status",
        "name",
        "requires_approval",
        "conversation__assistant_id",
        ("conversation__user", admin.RelatedOnlyFieldListFilter),
        "created_at",
    ]
    search_fields = ["name", "call_id", "conversation__user__username"]
    list_select_related = ["conversation__user", "decided_by"]
    actions = [approve_selected, reject_selected]
    form = ToolCallArgumentsForm
    readonly_fields = [
        "conversation",
        "message",
        "call_id",
        "name",
        "arguments_display",
        "original_arguments_display",
        "raw_arguments",
        "extras",
        "status",
        "result",
        "error",
        "requires_approval",
        "decided_by",
        "decided_at",
        "decision_reason",
        "created_at",
        "started_at",
        "finished_at",
        "duration_ms",
    ]

    @admin.display(description=_("user"), ordering="conversation__user")
    def requesting_user(self, obj: ToolCall) -> Any:
        return obj.conversation.user

    @admin.display(description=_("conversation"))
    def conversation_link(self, obj: ToolCall) -> str:
        url = reverse(f"{self.admin_site.name}:toolcalling_conversation_change", args=[obj.conversation_id])
        return format_html("<a href='{}'>{}</a>", url, str(obj.conversation)[:40])

    @admin.display(description=_("arguments"))
    def arguments_display(self, obj: ToolCall) -> str:
        return pretty_json(obj.arguments)

    @admin.display(description=_("original arguments"))
    def original_arguments_display(self, obj: ToolCall) -> str:
        return pretty_json(obj.original_arguments) if obj.original_arguments is not None else "-"

    @admin.display(description=_("age"), ordering="created_at")
    def age(self, obj: ToolCall) -> str:
        return timesince(obj.created_at)

    # Only approvers decide; the change form exists only to edit a waiting call's arguments.

    def has_approve_permission(self, request: HttpRequest) -> bool:
        return can_approve(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or can_approve(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if not can_approve(request.user):
            return False
        return obj is None or obj.status == ToolCall.Status.AWAITING_APPROVAL

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is not None and self.has_change_permission(request, obj):
            return ["arguments", *(f for f in self.readonly_fields if f != "arguments_display")]
        return list(self.readonly_fields)

    def save_model(self, request: HttpRequest, obj: ToolCall, form: forms.ModelForm, change: bool) -> None:
        if "arguments" not in form.changed_data:
            return
        stored = ToolCall.objects.select_related("conversation").get(pk=obj.pk)
        try:
            approval.edit_arguments(stored, request.user, form.cleaned_data["arguments"])
        except (AlreadyDecided, InvalidArguments) as exc:
            self.message_user(request, str(exc), messages.ERROR)

    def get_urls(self) -> list[URLPattern]:
        stats = path("stats/", self.admin_site.admin_view(self.stats_view), name="toolcalling_toolcall_stats")
        return [stats, *super().get_urls()]

    def stats_view(self, request: HttpRequest) -> HttpResponse:
        """Per tool: calls, failures, failure rate and mean duration, from one aggregate query."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request),
            "title": _("Tool statistics"),
            "opts": self.model._meta,
            "rows": tool_stats(),
        }
        return TemplateResponse(request, "admin/toolcalling/toolcall/tool_stats.html", context)
