"""The serializers every edge shares: a message as the API, the error bodies and the frontends show it (with its tool
calls and files), and a posted message's input, checked the same way whichever edge posts it."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers
from rest_framework.fields import Field, SkipField

from .. import approval
from ..conf import toolcalling_settings
from ..exceptions import NotRegistered
from ..models import Attachment, Message, ToolCall
from ..toolkit import tool_label, tools


class ToolCallStatusField(serializers.ChoiceField):
    """A tool call's status (a class of its own, so the API schema can name its enum)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(ToolCall.Status.choices, **kwargs)


def in_parameter_order(tool_name: str, arguments: Any) -> Any:
    """Arguments in the order of the tool's parameters (unknown keys after them): the stored order is the
    database's (PostgreSQL's jsonb keeps none), and the API and the chat page show the same on every one."""
    try:
        parameters = tools.get(tool_name).parameters.get("properties", {})
    except NotRegistered:
        return arguments
    if not isinstance(arguments, dict):
        return arguments
    return {**{key: arguments[key] for key in parameters if key in arguments}, **arguments}


class ReadSerializer(serializers.ModelSerializer):
    """A model serializer for showing rows, whose output is DRF's, read with less work: a field whose source is
    one attribute that holds a value takes it with one ``getattr``; a field with a lookup of its own (a related
    field), a method, ``source="*"`` or an attribute that cannot be read goes through DRF's ``get_attribute``.
    Every message of every turn's answer is shown so."""

    def to_representation(self, instance: Any) -> dict[str, Any]:
        if isinstance(instance, Mapping):
            return super().to_representation(instance)
        shown: dict[str, Any] = {}
        for name, field, attr in self.shown_fields:
            try:
                value = self.value(instance, field, attr)
            except SkipField:
                continue
            shown[name] = None if value is None else field.to_representation(value)
        return shown

    @staticmethod
    def value(instance: Any, field: Field, attr: str | None) -> Any:
        if attr is not None:
            try:
                value = getattr(instance, attr)
            except (AttributeError, ObjectDoesNotExist):
                pass  # DRF's lookup decides: a default, None, skipped, or its error
            else:
                if not callable(value):
                    return value
        return field.get_attribute(instance)

    @cached_property
    def shown_fields(self) -> list[tuple[str, Field, str | None]]:
        """DRF's readable fields, listed once, each with its name and the attribute read for it by ``getattr``
        (``None``: read by DRF's ``get_attribute``)."""
        found = []
        for field in self._readable_fields:
            plain = len(field.source_attrs) == 1 and type(field).get_attribute is Field.get_attribute
            found.append((str(field.field_name), field, field.source_attrs[0] if plain else None))
        return found


class ToolCallSerializer(ReadSerializer):
    status = ToolCallStatusField(read_only=True)
    # A declared field, which DRF's metaclass takes off the class: not the Field.label attribute the stubs see.
    label = serializers.SerializerMethodField(  # type: ignore[assignment]
        help_text="What end users see instead of the tool's name."
    )
    preview = serializers.SerializerMethodField(
        help_text="For someone who may decide this waiting call: its tool's approval_preview, computed now."
    )

    class Meta:
        model = ToolCall
        fields = [
            "id",
            "call_id",
            "name",
            "label",
            "arguments",
            "original_arguments",
            "status",
            "result",
            "error",
            "requires_approval",
            "approver",
            "preview",
            "decision_reason",
            "decided_at",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields

    def get_label(self, call: ToolCall) -> str:
        return tool_label(call.name)

    def get_preview(self, call: ToolCall) -> dict[str, Any] | None:
        """``{"value": text or data, "error": ""}`` while the call waits and the reader may decide it."""
        request = self.context.get("request")
        if request is None or call.status != ToolCall.Status.AWAITING_APPROVAL:
            return None
        if not approval.may_decide(call, request.user):
            return None
        found = approval.preview(call)
        return found.as_data() if found is not None else None

    def to_representation(self, instance: ToolCall) -> dict[str, Any]:
        data = super().to_representation(instance)
        for key in ("arguments", "original_arguments"):
            data[key] = in_parameter_order(instance.name, data[key])
        return data


class AttachmentSerializer(ReadSerializer):
    url = serializers.SerializerMethodField(help_text="Where its owner (and staff who may view it) reads the file.")

    class Meta:
        model = Attachment
        fields = ["id", "name", "content_type", "size", "url"]
        read_only_fields = fields

    def get_url(self, attachment: Attachment) -> str:
        return reverse("toolcalling:attachment-content", kwargs={"pk": attachment.pk})


class MessageSerializer(ReadSerializer):
    tool_calls = ToolCallSerializer(many=True, read_only=True)
    attachments = AttachmentSerializer(
        many=True, read_only=True, source="sent_files", help_text="The files a user message carries."
    )

    class Meta:
        model = Message
        fields = [
            "id",
            "role",
            "content",
            "tool_calls",
            "tool_call_id",
            "attachments",
            "data",
            "model",
            "prompt_tokens",
            "completion_tokens",
            "cached_tokens",
            "reasoning_tokens",
            "cost",
            "price",
            "created_at",
        ]
        read_only_fields = fields


class AttachmentIdsField(serializers.ListField):
    """A list of upload ids; a wrong one is one flat error (DRF's list reports them by index, off its own
    400 shape of a list of sentences per field)."""

    child = serializers.UUIDField()

    def run_child_validation(self, data: list[Any]) -> list[uuid.UUID]:
        try:
            return [uuid.UUID(str(item)) for item in data]
        except ValueError:
            raise serializers.ValidationError(_("Each attachment must be the id of an upload."))


class MessageInputSerializer(serializers.Serializer):
    content = serializers.CharField(trim_whitespace=True, allow_blank=False)
    background = serializers.BooleanField(default=False, help_text="Run the turn on a Celery worker; answer 202.")
    attachments = AttachmentIdsField(
        required=False, default=list,
        help_text="Ids of the user's own uploads (POST attachments/) this message carries.",
    )  # fmt: skip

    def get_fields(self) -> dict[str, Any]:
        # The limit is a setting, read per request; as the field's max_length it is in the API schema too.
        fields = super().get_fields()
        limit = toolcalling_settings.MAX_MESSAGE_LENGTH
        fields["content"] = serializers.CharField(
            trim_whitespace=True,
            allow_blank=False,
            max_length=limit,
            error_messages={"max_length": _("The message is too long: it may have at most {max_length} characters.")},
            help_text=f"The user's message, at most {limit} characters (TOOLCALLING['MAX_MESSAGE_LENGTH']).",
        )
        return fields


class JSONField(serializers.JSONField):
    """DRF's ``JSONField``, with JSON nested too deeply a 400 like any other bad JSON: a form's field is parsed
    here, not by the app's JSON parser, and DRF's field catches only ``TypeError`` and ``ValueError``."""

    default_error_messages = {"too_deep": _("The JSON is nested too deeply.")}

    def to_internal_value(self, data: Any) -> Any:
        try:
            return super().to_internal_value(data)
        except RecursionError:
            self.fail("too_deep")
