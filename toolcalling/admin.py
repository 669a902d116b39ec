"""Admin views: conversations with their messages and calls, and the tool call list staff decide on."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from .models import Conversation, Message, ToolCall
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


@admin.register(ToolCall)
class ToolCallAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "status", "requesting_user", "conversation_link", "created_at", "duration_ms"]
    list_filter = [
        "status",
        "name",
        "requires_approval",
        "conversation__assistant_id",
        ("conversation__user", admin.RelatedOnlyFieldListFilter),
        "created_at",
    ]
    search_fields = ["name", "call_id", "conversation__user__username"]
    list_select_related = ["conversation__user"]
    readonly_fields = [
        "conversation",
        "message",
        "call_id",
        "name",
        "arguments_display",
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
    exclude = ["arguments", "index"]

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

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

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
