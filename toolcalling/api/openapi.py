"""The API's OpenAPI description, for sites that use drf-spectacular (``pip install django-toolcalling[openapi]``).

The app config imports this module only when drf-spectacular is installed, so the app works without it.
The views carry no schema code: each is described here by an ``OpenApiViewExtension``, which hands
drf-spectacular an annotated subclass of the view when it builds the site's schema. Every endpoint lists
its bodies, the streamed (``text/event-stream``) and ``202`` variants of a posted message, and the error
bodies with their codes (``toolcalling.exceptions``, shaped by ``api.errors``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension, OpenApiViewExtension
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)
from rest_framework import serializers

from ..models import Conversation, ToolCall
from .serializers import (
    ApprovalToolCallSerializer,
    ApproveInputSerializer,
    ConversationSerializer,
    ConversationStatusField,
    MessageInputSerializer,
    MessageSerializer,
    RejectInputSerializer,
    ToolCallSerializer,
)
from .throttling import DEFAULT_TURN_RATE

# Statuses -----------------------------------------------------------------------------------------------


class ConversationStatusSchema(OpenApiSerializerFieldExtension):
    """One named enum per status field class, so a site's schema needs no ENUM_NAME_OVERRIDES for ours."""

    target_class = "toolcalling.api.serializers.ConversationStatusField"
    component = "ConversationStatus"
    choices = Conversation.Status

    def get_name(self) -> str:
        return self.component

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        described = "; ".join(f"`{value}`: {label}" for value, label in self.choices.choices)
        return {"type": "string", "enum": list(self.choices.values), "description": described}


class ToolCallStatusSchema(ConversationStatusSchema):
    target_class = "toolcalling.api.serializers.ToolCallStatusField"
    component = "ToolCallStatus"
    choices = ToolCall.Status


# Bodies -------------------------------------------------------------------------------------------------


class ErrorSerializer(serializers.Serializer):
    """Every error but a validation error: what went wrong, for people and for programs."""

    detail = serializers.CharField(help_text="What went wrong, as a sentence.")
    code = serializers.CharField(
        help_text="What went wrong, for programs: conversation_busy, nothing_waiting, assistant_unavailable, "
        "already_decided, model_error, model_call_limit_exceeded, tool_call_limit_exceeded, "
        "output_validation_failed, tool_error, usage_limit_exceeded, queue_unavailable, or DRF's own "
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
            "tool_call_decided, awaiting_approval, error or turn_end (see the README's event table).",
        },
        "data": {"type": "string", "description": "JSON: `seq`, `type` and the fields of that type."},
        "retry": {"type": "integer", "description": "How long a reader waits before it reconnects (ms)."},
    },
    "required": ["data"],
}

EVENT_STREAM = OpenApiResponse(
    SERVER_SENT_EVENT,
    description="Server-sent events (`id:` = the event's seq, `event:` = its type, `data:` = JSON); "
    "see the README's event table.",
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
    429: OpenApiResponse(ErrorSerializer, description="throttled, usage_limit_exceeded (with Retry-After)."),
    503: OpenApiResponse(ErrorSerializer, description="queue_unavailable: nothing was started or decided."),
}


def errors(*statuses: int, **described: str) -> dict[int, OpenApiResponse]:
    """The error responses of one operation; ``described`` rewords one, e.g. ``e409="conversation_busy."``."""
    out = {status: ERRORS[status] for status in (401, 403, *statuses)}
    for key, text in described.items():
        status = int(key.removeprefix("e"))
        out[status] = OpenApiResponse(ERRORS[status].response, description=text)
    return out


def as_json(responses: dict[int, OpenApiResponse]) -> dict[tuple[int, str], OpenApiResponse]:
    return {(status, "application/json"): response for status, response in responses.items()}


# Views --------------------------------------------------------------------------------------------------

ASSISTANT_PARAMETER = OpenApiParameter("assistant", str, description="Only conversations with this assistant.")
STATUS_PARAMETER = OpenApiParameter(
    "status",
    str,
    description="Only calls with these statuses, comma-separated: " + ", ".join(ToolCall.Status.values) + ".",
)
PAGE_PARAMETERS = [
    OpenApiParameter("cursor", str, description="Ask for pages; the cursor of the page to answer (from `next`)."),
    OpenApiParameter("page_size", int, description="Ask for pages of this many messages (default 50, at most 200)."),
]
AFTER_PARAMETERS = [
    OpenApiParameter("after", int, description="Replay the events after this seq first (default: only new ones)."),
    OpenApiParameter(
        "Last-Event-ID",
        int,
        location=OpenApiParameter.HEADER,
        description="As `after`; sent by a reconnecting EventSource, and wins over `after`.",
    ),
]


class ConversationViewSetSchema(OpenApiViewExtension):
    target_class = "toolcalling.api.views.ConversationViewSet"
    match_subclasses = True

    def view_replacement(self) -> type:
        @extend_schema_view(
            list=extend_schema(
                summary="The user's conversations",
                description="Newest activity first; paginated as the site's DRF settings say.",
                parameters=[ASSISTANT_PARAMETER],
                responses={200: ConversationSerializer, **errors()},
            ),
            create=extend_schema(
                summary="Start a conversation",
                description='With `{"assistant": "<id>"}`; the user must be allowed to use that assistant.',
                responses={201: ConversationSerializer, **errors(400)},
            ),
            retrieve=extend_schema(
                summary="One conversation",
                description="With its `status`; another user's conversation is a 404.",
                responses={200: ConversationSerializer, **errors(404)},
            ),
            partial_update=extend_schema(
                summary="Rename a conversation",
                description="Only `title` can change.",
                responses={200: ConversationSerializer, **errors(400, 404)},
            ),
            destroy=extend_schema(
                summary="Delete a conversation",
                description="With its messages and tool calls.",
                responses={204: None, **errors(404)},
            ),
            cancel=extend_schema(
                summary="Cancel the waiting calls",
                description="Each call still awaiting approval is answered as cancelled; the conversation is idle.",
                request=None,
                responses={200: CancelResultSerializer, **errors(404, e409="nothing_waiting: no call waits.")},
            ),
        )
        class Described(self.target):  # type: ignore[name-defined, misc]
            def get_queryset(self) -> Any:
                if getattr(self, "swagger_fake_view", False):  # building the schema: there is no user
                    return Conversation.objects.none()
                return super().get_queryset()

        return Described


class MessageListViewSchema(OpenApiViewExtension):
    target_class = "toolcalling.api.views.MessageListView"
    match_subclasses = True

    def view_replacement(self) -> type:
        post_responses = {
            (201, "application/json"): OpenApiResponse(
                TurnResultSerializer, description="The turn ran; its new messages and the calls waiting for approval."
            ),
            (200, "text/event-stream"): OpenApiResponse(
                SERVER_SENT_EVENT,
                description="With `Accept: text/event-stream`: the turn's events as server-sent events, "
                "until `turn_end`.",
            ),
            (202, "application/json"): OpenApiResponse(
                BackgroundTurnSerializer, description='With `"background": true`: a Celery worker runs the turn.'
            ),
            **as_json(
                errors(
                    400,
                    404,
                    409,
                    429,
                    503,
                    e403="permission_denied: the user may not use this assistant (or is not signed in).",
                    e409="conversation_busy (a turn runs or calls await a decision), assistant_unavailable.",
                    e429=f"throttled (scope toolcalling_turn, default {DEFAULT_TURN_RATE}), usage_limit_exceeded.",
                )
            ),
            (422, "application/json"): OpenApiResponse(
                TurnErrorSerializer,
                description="The turn failed: model_call_limit_exceeded, tool_call_limit_exceeded, "
                "output_validation_failed, tool_error.",
            ),
            (502, "application/json"): OpenApiResponse(
                TurnErrorSerializer, description="model_error: the model endpoint failed."
            ),
        }

        @extend_schema_view(
            get=extend_schema(
                summary="The conversation's history",
                description="The whole history, oldest first; with `cursor` or `page_size` a page of it, newest first.",
                parameters=PAGE_PARAMETERS,
                responses={200: MessageHistorySerializer, **errors(404)},
            ),
            post=extend_schema(
                summary="Post a message: run a turn",
                description="Answers with the turn's new messages (201); with `Accept: text/event-stream` "
                'streams its events (200); with `"background": true` a Celery worker runs it (202). Throttled '
                f"by the scope `toolcalling_turn` (default {DEFAULT_TURN_RATE} per user).",
                request=MessageInputSerializer,
                responses=post_responses,
            ),
        )
        class Described(self.target):  # type: ignore[name-defined, misc]
            pass

        return Described


class ConversationEventsViewSchema(OpenApiViewExtension):
    target_class = "toolcalling.api.streams.ConversationEventsView"
    match_subclasses = True

    def view_replacement(self) -> type:
        @extend_schema_view(
            get=extend_schema(
                summary="Follow the conversation's events",
                description="Server-sent events as they happen, resumable from `after` or `Last-Event-ID`; "
                "the stream closes after EVENTS_IDLE_TIMEOUT seconds without an event (reconnect).",
                parameters=AFTER_PARAMETERS,
                responses={(200, "text/event-stream"): EVENT_STREAM, **as_json(errors(400, 404))},
            )
        )
        class Described(self.target):  # type: ignore[name-defined, misc]
            pass

        return Described


class AssistantListViewSchema(OpenApiViewExtension):
    target_class = "toolcalling.api.views.AssistantListView"
    match_subclasses = True

    def view_replacement(self) -> type:
        @extend_schema_view(
            get=extend_schema(
                summary="The assistants this user may use",
                responses={200: AssistantSerializer(many=True), **errors()},
            )
        )
        class Described(self.target):  # type: ignore[name-defined, misc]
            pass

        return Described


class ToolCallViewSetSchema(OpenApiViewExtension):
    target_class = "toolcalling.api.views.ToolCallViewSet"
    match_subclasses = True

    def view_replacement(self) -> type:
        decided = "already_decided: the call was decided, cancelled or expired first."

        @extend_schema_view(
            list=extend_schema(
                summary="Tool calls",
                description="Approvers see every call, other users the calls of their own conversations.",
                parameters=[STATUS_PARAMETER],
                responses={200: AnyToolCallSerializer, **errors(400)},
            ),
            retrieve=extend_schema(summary="One tool call", responses={200: AnyToolCallSerializer, **errors(404)}),
            approve=extend_schema(
                summary="Approve a waiting call",
                description="Optionally with edited `arguments`; a Celery worker runs the call, exactly once. "
                "Approvers only.",
                request=ApproveInputSerializer,
                responses={200: ApprovalToolCallSerializer, **errors(400, 404, 409, 503, e409=decided)},
            ),
            reject=extend_schema(
                summary="Reject a waiting call",
                description="With a `reason` the model is told. Approvers only.",
                request=RejectInputSerializer,
                responses={200: ApprovalToolCallSerializer, **errors(400, 404, 409, e409=decided)},
            ),
        )
        class Described(self.target):  # type: ignore[name-defined, misc]
            def get_queryset(self) -> Any:
                if getattr(self, "swagger_fake_view", False):
                    return ToolCall.objects.none()
                return super().get_queryset()

            def get_serializer_class(self) -> Any:
                if getattr(self, "swagger_fake_view", False):
                    return AnyToolCallSerializer
                return super().get_serializer_class()

        return Described
