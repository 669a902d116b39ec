"""Admin views: conversations with their messages and calls, and the tool call list staff decide on."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.timesince import timesince
from django.utils.translation import gettext_lazy as _

from . import approval
from .definitions import InvalidArguments
from .exceptions import AlreadyDecided, TaskQueueUnavailable
from .models import Conversation, Message, ToolCall
from .permissions import can_approve
from .stats import tool_stats


def pretty_json(value: Any) -> str:
    return format_html(
        "<pre style='margin:0;white-space:pre-wrap'>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False)
    )


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MessageInline(ReadOnlyInline):
    model = Message
    fields = ["id", "role", "content", "tool_call_id", "total_tokens", "created_at"]
    readonly_fields = fields


class ToolCallInline(ReadOnlyInline):
    model = ToolCall
    fields = ["name", "status", "arguments_display", "result", "error", "duration_ms"]
    readonly_fields = fields
    show_change_link = True

    @admin.display(description=_("arguments"))
    def arguments_display(self, obj: ToolCall) -> str:
        return pretty_json(obj.arguments)


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["__str__", "user", "assistant_id", "status", "total_tokens", "updated_at"]
    list_filter = ["status", "assistant_id", ("user", admin.RelatedOnlyFieldListFilter), "created_at"]
    search_fields = ["title", "user__username", "id"]
    raw_id_fields = ["user"]
    readonly_fields = [
        "id",
        "status",
        "error",
        "state",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "created_at",
        "updated_at",
    ]
    inlines = [MessageInline, ToolCallInline]
    list_select_related = ["user"]


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


@admin.action(description=_("Approve selected tool calls"), permissions=("approve",))
def approve_selected(modeladmin: ToolCallAdmin, request: HttpRequest, queryset: QuerySet[ToolCall]) -> None:
    """Approve each waiting call; workers run them and continue the conversations."""
    approved, skipped = [], []
    for call in queryset.select_related("conversation"):
        try:
            approval.approve(call, request.user)
        except (AlreadyDecided, TaskQueueUnavailable) as exc:
            skipped.append(f"#{call.pk} {call.name}: {exc}")
        else:
            approved.append(call)
    report(modeladmin, request, approved, skipped, _("Approved %(count)d tool call(s); a worker runs them now."))


@admin.action(description=_("Reject selected tool calls"), permissions=("approve",))
def reject_selected(
    modeladmin: ToolCallAdmin, request: HttpRequest, queryset: QuerySet[ToolCall]
) -> TemplateResponse | None:
    """Ask for a reason on an intermediate page (like ``delete_selected``), then reject each waiting call."""
    if request.POST.get("post") != "yes":
        opts = modeladmin.model._meta
        context = {
            **modeladmin.admin_site.each_context(request),
            "title": _("Reject tool calls"),
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
    reason = request.POST.get("reason", "").strip()
    rejected, skipped = [], []
    for call in queryset.select_related("conversation"):
        try:
            approval.reject(call, request.user, reason)
        except AlreadyDecided as exc:
            skipped.append(f"#{call.pk} {call.name}: {exc}")
        else:
            rejected.append(call)
    report(modeladmin, request, rejected, skipped, _("Rejected %(count)d tool call(s); the model is told why."))
    return None


def report(
    modeladmin: ToolCallAdmin, request: HttpRequest, done: list[ToolCall], skipped: list[str], text: str
) -> None:
    if done:
        modeladmin.message_user(request, text % {"count": len(done)}, messages.SUCCESS)
    if skipped:
        modeladmin.message_user(request, _("Skipped: ") + "; ".join(skipped), messages.WARNING)


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


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["id", "conversation", "role", "short_content", "total_tokens", "created_at"]
    list_filter = ["role", "conversation__assistant_id"]
    search_fields = ["content"]
    list_select_related = ["conversation"]

    @admin.display(description=_("content"))
    def short_content(self, obj: Message) -> str:
        return obj.content[:80]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
