"""REST serializers for conversations, what approvers see of tool calls, and decisions. A message and its tool calls
are shown as every edge shows them (``toolcalling.web``)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy
from rest_framework import serializers

from .. import approval
from ..exceptions import NotRegistered
from ..models import Conversation
from ..toolkit import assistants, storable
from ..web import JSONField, ToolCallSerializer


class ConversationStatusField(serializers.ChoiceField):
    """A conversation's status (a class of its own, so the API schema can name its enum)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(Conversation.Status.choices, **kwargs)


class ApprovalToolCallSerializer(ToolCallSerializer):
    """What approvers see: also whose conversation the call belongs to."""

    conversation = serializers.UUIDField(source="conversation_id", read_only=True)
    user = serializers.CharField(source="conversation.user.get_username", read_only=True)
    assistant = serializers.CharField(source="conversation.assistant_id", read_only=True)

    class Meta(ToolCallSerializer.Meta):
        fields = [*ToolCallSerializer.Meta.fields, "conversation", "user", "assistant"]
        read_only_fields = fields


class ConversationSerializer(serializers.ModelSerializer):
    assistant = serializers.CharField(source="assistant_id")
    status = ConversationStatusField(read_only=True)

    class Meta:
        model = Conversation
        fields = [
            "id",
            "assistant",
            "title",
            "status",
            "origin",
            "error",
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
        read_only_fields = [f for f in fields if f not in ("assistant", "title")]

    def update(self, instance: Conversation, validated_data: dict) -> Conversation:
        """Write the title alone: a turn may be changing the status and totals of this row right now."""
        title = validated_data.get("title", instance.title)
        Conversation.objects.filter(pk=instance.pk).update(title=storable(title), updated_at=timezone.now())
        instance.refresh_from_db()
        return instance

    def validate_assistant(self, value: str) -> str:
        if self.instance is not None and value != self.instance.assistant_id:
            raise serializers.ValidationError(_("A conversation's assistant cannot be changed."))
        try:
            assistant = assistants.get(value)()
        except NotRegistered:
            raise serializers.ValidationError(
                pgettext_lazy("toolcalling", "Unknown assistant %(assistant)s.") % {"assistant": repr(value)}
            )
        if not assistant.has_permission(self.context["request"].user):
            raise serializers.ValidationError(
                _("You may not use the assistant %(assistant)s.") % {"assistant": repr(value)}
            )
        return value


class ReasonField(serializers.CharField):
    """A decision's reason, refused or taken by ``approval.validate_decision``, as on every path that decides."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", approval.REASON_MAX_LENGTH)  # for the API schema; checked below first
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        text = super().to_internal_value(data)
        try:
            return approval.validate_decision(reason=text)[0]
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict["reason"])


class ApproveInputSerializer(serializers.Serializer):
    arguments = JSONField(
        required=False, help_text="Edited arguments to run the call with; checked against the tool's signature."
    )


class RejectInputSerializer(serializers.Serializer):
    reason = ReasonField(required=False, allow_blank=True, default="")


class SettleInputSerializer(serializers.Serializer):
    outcome = serializers.ChoiceField(
        choices=approval.SETTLEMENTS,
        help_text="What became of a call whose process stopped while it ran: `succeeded` (it took effect), "
        "`failed` (it did not) or `retry` (run it again, with the same idempotency key).",
    )
    result = ReasonField(
        required=False, allow_blank=True, default="", help_text="What the model is told (succeeded, failed)."
    )
