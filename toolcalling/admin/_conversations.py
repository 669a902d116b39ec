"""Admin views of conversations and their messages: the audit trail of what was said and done."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import pgettext, pgettext_lazy

from ..conf import toolcalling_settings
from ..models import Attachment, Conversation, Message, ToolCall
from ..toolkit import storable
from ._selection import CheckedSelectionAdmin


def pretty_json(value: Any) -> str:
    return format_html(
        "<pre style='margin:0;white-space:pre-wrap'>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False)
    )


def money(cost: Decimal | None, unpriced: int = 0) -> str:
    """A cost as staff read it: in the site's currency, with the answers it leaves out (never a bare zero)."""
    shown = "—" if cost is None else f"{cost.normalize():f} {toolcalling_settings.CURRENCY}"
    if unpriced:
        return pgettext_lazy("toolcalling admin", "%(cost)s (+%(count)d unpriced)") % {"cost": shown, "count": unpriced}
    return shown


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
    fields = readonly_fields = ("id", "role", "content", "tool_call_id", "total_tokens", "cost", "created_at")


class AttachmentInline(ReadOnlyInline):
    """The files users sent: images as thumbnails, each a link to the file (served to staff who may view this)."""

    model = Attachment
    fields = readonly_fields = ("thumbnail", "name", "content_type", "size", "message", "created_at")
    ordering = ("created_at",)

    @admin.display(description=pgettext_lazy("toolcalling attachment column", "file"))
    def thumbnail(self, obj: Attachment) -> str:
        url = reverse("toolcalling:attachment-content", kwargs={"pk": obj.pk})
        if obj.is_image:
            return format_html(
                "<a href='{}' target='_blank' rel='noopener'><img src='{}' alt='{}' loading='lazy' "
                "style='max-width:96px;max-height:96px;border-radius:4px'></a>", url, url, obj.name
            )  # fmt: skip
        return format_html("<a href='{}'>{}</a>", url, pgettext("toolcalling attachment link", "Download"))


class ToolCallInline(ReadOnlyInline):
    model = ToolCall
    fields = readonly_fields = ("name", "status", "arguments_display", "result", "error", "duration_ms")
    show_change_link = True

    @admin.display(description=pgettext_lazy("toolcalling admin", "arguments"))
    def arguments_display(self, obj: ToolCall) -> str:
        return pretty_json(obj.arguments)


@admin.register(Conversation)
class ConversationAdmin(CheckedSelectionAdmin):
    list_display = ["__str__", "user", "assistant_id", "status", "total_tokens", "cost_display", "updated_at"]
    list_filter = ["status", "origin", "assistant_id", ("user", admin.RelatedOnlyFieldListFilter), "created_at"]
    search_fields = ["title", "user__username", "id"]
    # Only the title may change: who it belongs to, where it stands and what it cost are the audit trail.
    readonly_fields = [
        "id",
        "user",
        "assistant_id",
        "status",
        "error",
        "state",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "cached_tokens",
        "reasoning_tokens",
        "cost",
        "unpriced_replies",
        "created_at",
        "updated_at",
    ]
    inlines = [MessageInline, AttachmentInline, ToolCallInline]
    list_select_related = ["user"]

    @admin.display(description=pgettext_lazy("toolcalling admin", "cost"), ordering="cost")
    def cost_display(self, obj: Conversation) -> str:
        return money(obj.cost, obj.unpriced_replies)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # conversations start in the chat, the API or Assistant.run(), never here

    def save_model(self, request: HttpRequest, obj: Conversation, form: Any, change: bool) -> None:
        """Write the title alone: a turn may be changing this row's status and totals right now, and the
        form's copy of them is as old as the page."""
        Conversation.objects.filter(pk=obj.pk).update(title=storable(obj.title))

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the audit trail; a site that must delete them overrides this


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["id", "conversation", "role", "short_content", "total_tokens", "cost", "created_at"]
    list_filter = ["role", "conversation__assistant_id"]
    search_fields = ["content"]
    list_select_related = ["conversation"]

    @admin.display(description=pgettext_lazy("toolcalling admin", "content"))
    def short_content(self, obj: Message) -> str:
        return obj.content[:80]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a deleted message would leave a history the model API refuses
