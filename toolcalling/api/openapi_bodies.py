"""The bodies, statuses and errors of the API's OpenAPI description (see ``openapi``), for drf-spectacular only.

These serializers and schemas describe what the views answer; the views do not use them. Imported, like
``openapi``, only when drf-spectacular is installed.
"""

from __future__ import annotations

from typing import Any

from django.db.models import TextChoices
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from ..models import Conversation, ToolCall
from ..web import MessageInputSerializer, MessageSerializer, ToolCallSerializer
from .serializers import ConversationStatusField

# Statuses -----------------------------------------------------------------------------------------------


class ConversationStatusSchema(OpenApiSerializerFieldExtension):
    """One named enum per status field class, so a site's schema needs no ENUM_NAME_OVERRIDES for ours."""

    target_class = "toolcalling.api.serializers.ConversationStatusField"
    component = "ConversationStatus"
    choices: type[TextChoices] = Conversation.Status

    def get_name(self) -> str:
        return self.component

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        described = "; ".join(f"`{value}`: {label}" for value, label in self.choices.choices)
        return {"type": "string", "enum": list(self.choices.values), "description": described}


class ToolCallStatusSchema(ConversationStatusSchema):
    target_class = "toolcalling.web.ToolCallStatusField"
    component = "ToolCallStatus"
    choices = ToolCall.Status


# Bodies -------------------------------------------------------------------------------------------------


class ErrorSerializer(serializers.Serializer):
    """Every error but a validation error: what went wrong, for people and for programs."""

    detail = serializers.CharField(help_text="What went wrong, as a sentence.")
    code = serializers.CharField(
        help_text="What went wrong, for programs: conversation_busy, nothing_waiting, assistant_unavailable, "
        "already_decided, model_error, model_call_limit_exceeded, tool_call_limit_exceeded, "
        "output_validation_failed, tool_error, usage_limit_exceeded, unpriced_model, queue_unavailable, or DRF's own "
        "(not_authenticated, permission_denied, not_found, throttled, ...)."
    )
    status = serializers.CharField(
        allow_null=True,
        help_text="The conversation's status after the error (for decisions, the call's), or null.",
    )


class TurnErrorSerializer(ErrorSerializer):
    """A turn that failed: the error, and the messages the turn stored before it failed."""

    messages = MessageSerializer(many=True, required=False, help_text="Present when a turn failed.")


VALIDATION_ERROR = {
    "type": "object",
    "description": "DRF's validation errors: each invalid field with its messages.",
    "additionalProperties": {"type": "array", "items": {"type": "string"}},
}
# A 400 is a validation error, or a body that could not be parsed (code parse_error, the one error shape).
BAD_REQUEST = {"anyOf": [VALIDATION_ERROR, {"$ref": "#/components/schemas/Error"}]}


class AssistantSerializer(serializers.Serializer):
    """An assistant this user may talk to."""

    id = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()


class TurnResultSerializer(serializers.Serializer):
    """A turn that ran: its new messages and the calls that wait for a decision."""

    status = ConversationStatusField(help_text="The conversation's status.")
    messages = MessageSerializer(many=True, help_text="The messages this turn stored, the user's first.")
    awaiting_approval = ToolCallSerializer(many=True, help_text="The calls that wait for a decision.")


class BackgroundTurnSerializer(serializers.Serializer):
    """A turn handed to a Celery worker, and where to follow it."""

    status = ConversationStatusField()
    after = serializers.IntegerField(help_text="The last event before this turn's.")
    events = serializers.URLField(help_text="Where to follow the turn: the events endpoint after `after`.")


class CancelResultSerializer(serializers.Serializer):
    """The waiting calls, now cancelled."""

    status = ConversationStatusField()
    cancelled = ToolCallSerializer(many=True)


class StopResultSerializer(serializers.Serializer):
    """A stop asked for: the running turn ends at its next step, in whichever process runs it."""

    status = ConversationStatusField(help_text="The conversation's status when the stop was asked for.")
    stop_requested = serializers.BooleanField(help_text="Always true.")


class UsedInPeriodSerializer(serializers.Serializer):
    """What the user used in one period."""

    period_start = serializers.DateTimeField()
    resets_at = serializers.DateTimeField()
    tokens = serializers.IntegerField()
    turns = serializers.IntegerField()
    tool_calls = serializers.IntegerField()
    cost = serializers.DecimalField(
        max_digits=20, decimal_places=10, help_text="What the priced answers cost, in the currency given."
    )
    unpriced_replies = serializers.IntegerField(
        help_text="Answers whose model has no price, or whose usage is unknown: not in the cost."
    )
    unknown_usage_replies = serializers.IntegerField(
        help_text="Answers whose endpoint reported no usage, or a malformed one (counted in unpriced_replies too)."
    )


class UsedPeriodsSerializer(serializers.Serializer):
    day = UsedInPeriodSerializer()
    month = UsedInPeriodSerializer()


@extend_schema_field({"oneOf": [{"type": "integer"}, {"type": "string", "format": "decimal"}]})
class AmountField(serializers.Field):
    """A limit's amount: a whole number of tokens, turns or tool calls, or a cost as a decimal string."""


class LimitUsedSerializer(serializers.Serializer):
    """One limit on the user's turns and how much of it is used."""

    quantity = serializers.ChoiceField(choices=["tokens", "turns", "tool_calls", "cost"])
    maximum = AmountField()
    per = serializers.CharField(
        help_text="Whose use it counts: user, assistant, site, or the name of a site's own scope."
    )
    period = serializers.ChoiceField(choices=["hour", "day", "month"])
    used = AmountField()
    remaining = AmountField()
    exceeded = serializers.BooleanField(help_text="True once used reaches maximum: turns are refused (429).")
    period_start = serializers.DateTimeField()
    resets_at = serializers.DateTimeField()
    assistants = serializers.ListField(child=serializers.CharField(), help_text="The assistants it applies to.")


class UsageSerializer(serializers.Serializer):
    """The user's own usage in the current day and month, and the limits that apply to their turns."""

    currency = serializers.CharField(help_text='TOOLCALLING["CURRENCY"]: of every cost, e.g. "USD".')
    usage = UsedPeriodsSerializer()
    limits = LimitUsedSerializer(many=True)


class MessagePageSerializer(serializers.Serializer):
    """One page of the history, newest first."""

    next = serializers.URLField(allow_null=True, help_text="Older messages, or null.")
    previous = serializers.URLField(allow_null=True, help_text="Newer messages, or null.")
    results = MessageSerializer(many=True)


MessageHistorySerializer = PolymorphicProxySerializer(
    component_name="MessageHistory",
    serializers=[MessageSerializer(many=True), MessagePageSerializer],
    resource_type_field_name=None,
    many=False,
)


class AnyToolCallSerializer(ToolCallSerializer):
    """A tool call; approvers also see whose conversation it belongs to."""

    conversation = serializers.UUIDField(required=False, help_text="Approvers only.")
    user = serializers.CharField(required=False, help_text="Approvers only.")
    assistant = serializers.CharField(required=False, help_text="Approvers only.")

    class Meta(ToolCallSerializer.Meta):
        fields = [*ToolCallSerializer.Meta.fields, "conversation", "user", "assistant"]
        read_only_fields = ToolCallSerializer.Meta.fields


# One server-sent event, as the stream's lines make it (OpenAPI 3.0 cannot say "a sequence of"; readers that
# know text/event-stream, like schemathesis, read the schema per event).
SERVER_SENT_EVENT = {
    "type": "object",
    "description": "One server-sent event; the stream starts with `retry:` and an `id:` line without data "
    "(the last event before it).",
    "properties": {
        "id": {"type": "string", "description": "The event's seq in its conversation (resume with Last-Event-ID)."},
        "event": {
            "type": "string",
            "description": "Its type: message, delta, tool_call, tool_call_started, tool_call_finished, "
            "tool_call_decided, awaiting_approval, error or turn_end (the event table of docs/guides/streaming.md).",
        },
        "data": {"type": "string", "description": "JSON: `seq`, `type` and the fields of that type."},
        "retry": {"type": "integer", "description": "How long a reader waits before it reconnects (ms)."},
    },
    "required": ["data"],
}

EVENT_STREAM = OpenApiResponse(
    SERVER_SENT_EVENT,
    description="Server-sent events (`id:` = the event's seq, `event:` = its type, `data:` = JSON); "
    "see the event table of docs/guides/streaming.md.",
)

# Attachments ----------------------------------------------------------------------------------------------

TYPES_TEXT = "PNG, JPEG, GIF, WebP or PDF by default (TOOLCALLING['ATTACHMENTS']['TYPES']), decided by the bytes"


@extend_schema_field({"type": "string", "format": "binary"})
class UploadField(serializers.FileField):
    """A file in a multipart body (drf-spectacular would describe a FileField by its URL, as it is read back)."""


class AttachmentUploadSerializer(serializers.Serializer):
    file = UploadField(help_text=f"The file: {TYPES_TEXT}; at most ATTACHMENTS['MAX_BYTES'].")


class MessageMultipartSerializer(MessageInputSerializer):
    """A message as a multipart body: its fields, and files uploaded with it."""

    files = serializers.ListField(
        child=UploadField(), required=False, help_text=f"Files this message carries: {TYPES_TEXT}."
    )


# A message's body: JSON with attachment ids, or multipart with the files themselves.
MESSAGE_BODIES = {"application/json": MessageInputSerializer, "multipart/form-data": MessageMultipartSerializer}
MESSAGE_ATTACHMENT_ERRORS = (
    "unsupported_attachment, too_many_attachments, unknown_attachment (an id that is not the user's own unsent "
    "upload), or invalid input; nothing of the message is stored."
)
# Errors -------------------------------------------------------------------------------------------------

ERRORS: dict[int, OpenApiResponse] = {
    400: OpenApiResponse(
        BAD_REQUEST,
        description="Invalid input (DRF's validation error shape), or a body that is not JSON (parse_error).",
    ),
    401: OpenApiResponse(ErrorSerializer, description="not_authenticated, authentication_failed."),
    403: OpenApiResponse(ErrorSerializer, description="permission_denied (or not signed in, with session auth)."),
    404: OpenApiResponse(ErrorSerializer, description="not_found: no such object of this user's."),
    409: OpenApiResponse(ErrorSerializer, description="A conflict; `code` says which."),
    413: OpenApiResponse(ErrorSerializer, description="attachment_too_large: the file is over the limit."),
    429: OpenApiResponse(ErrorSerializer, description="throttled, usage_limit_exceeded (with Retry-After)."),
    501: OpenApiResponse(ErrorSerializer, description="Not implemented here."),
    503: OpenApiResponse(
        ErrorSerializer,
        description="database_unavailable (with Retry-After; any operation), queue_unavailable, or unpriced_model (a "
        "cost limit applies and the assistant's model has no price): nothing was started or decided.",
    ),
}


def errors(*statuses: int, **described: str) -> dict[int, OpenApiResponse]:
    """The error responses of one operation (any may answer 503 ``database_unavailable``); ``described`` rewords
    one, e.g. ``e409="conversation_busy."``."""
    out = {status: ERRORS[status] for status in (401, 403, *statuses, 503)}
    for key, text in described.items():
        status = int(key.removeprefix("e"))
        out[status] = OpenApiResponse(ERRORS[status].response, description=text)
    return out


def as_json(responses: dict[int, OpenApiResponse]) -> dict[tuple[int, str], OpenApiResponse]:
    return {(status, "application/json"): response for status, response in responses.items()}


# MCP ----------------------------------------------------------------------------------------------------

JSON_RPC_MESSAGE = {
    "description": "A JSON-RPC 2.0 message of the Model Context Protocol, or a batch of them.",
    "anyOf": [{"type": "object", "additionalProperties": {}}, {"type": "array", "items": {"type": "object"}}],
}
JSON_RPC_ANSWER = {
    "description": "The JSON-RPC answer (`result` or `error`), or the answers of a batch.",
    "anyOf": [
        {"type": "object", "properties": {"jsonrpc": {"type": "string"}}, "required": ["jsonrpc"]},
        {"type": "array", "items": {"type": "object"}},
    ],
}


# The frontends' bodies (toolcalling.frontends): the AI SDK's and AG-UI's, described by those projects.
UI_MESSAGE_STREAM = OpenApiResponse(
    {"type": "string", "description": "`data:` lines, each a UI message chunk (JSON), then `data: [DONE]`."},
    description="The Vercel AI SDK's UI message stream, v1 (header `x-vercel-ai-ui-message-stream: v1`).",
)
CHAT_REQUEST = {
    "type": "object",
    "description": "What the AI SDK's DefaultChatTransport posts; only the last message is read.",
    "properties": {
        "id": {"type": "string", "description": "The chat id: a conversation of this user."},
        "messages": {"type": "array", "items": {"type": "object"}},
        "trigger": {"type": "string", "enum": ["submit-message", "regenerate-message"]},
        "messageId": {"type": "string", "nullable": True},
        "background": {"type": "boolean", "description": "Run the turn on a Celery worker; the stream follows it."},
    },
    "required": ["id", "messages"],
}
AG_UI_EVENTS = OpenApiResponse(
    {"type": "string", "description": "`data:` lines, each an AG-UI event (JSON)."},
    description="AG-UI events: RUN_STARTED, TEXT_MESSAGE_*, TOOL_CALL_*, then RUN_FINISHED or RUN_ERROR.",
)
# The frontends' histories, each in its own protocol's shape.
UI_MESSAGES = OpenApiResponse(
    {"type": "array", "items": {"type": "object", "description": "An AI SDK UIMessage."}},
    description="User messages, and an assistant message per answer (its steps' reasoning, text and tool parts).",
)
MESSAGES_SNAPSHOT = OpenApiResponse(
    {"type": "object", "description": "AG-UI's MessagesSnapshotEvent."}, description="The thread's messages."
)
