"""The API's OpenAPI description, for sites that use drf-spectacular (``pip install django-toolcalling[openapi]``).

The app config imports this module only when drf-spectacular is installed, so the app works without it.
The views carry no schema code: each is described here by an ``OpenApiViewExtension``, which hands
drf-spectacular an annotated subclass of the view when it builds the site's schema. Every endpoint lists
its bodies, the streamed (``text/event-stream``) and ``202`` variants of a posted message, and the error
bodies with their codes (``toolcalling.exceptions``, shaped by ``api.errors``); the bodies themselves are
in ``openapi_bodies``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiViewExtension
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view

from ..conf import ATTACHMENT_TYPES
from ..models import Conversation, ToolCall
from ..web import DEFAULT_TURN_RATE, AttachmentSerializer
from .client_results import ClientResultInputSerializer
from .openapi_bodies import (
    AG_UI_EVENTS,
    CHAT_REQUEST,
    EVENT_STREAM,
    JSON_RPC_ANSWER,
    JSON_RPC_MESSAGE,
    MESSAGE_ATTACHMENT_ERRORS,
    MESSAGE_BODIES,
    MESSAGES_SNAPSHOT,
    SERVER_SENT_EVENT,
    TYPES_TEXT,
    UI_MESSAGE_STREAM,
    UI_MESSAGES,
    AnyToolCallSerializer,
    AssistantSerializer,
    AttachmentUploadSerializer,
    BackgroundTurnSerializer,
    CancelResultSerializer,
    MessageHistorySerializer,
    StopResultSerializer,
    TurnErrorSerializer,
    TurnResultSerializer,
    UsageSerializer,
    as_json,
    errors,
)
from .serializers import (
    ApprovalToolCallSerializer,
    ApproveInputSerializer,
    ConversationSerializer,
    RejectInputSerializer,
    SettleInputSerializer,
)
from .throttling import DEFAULT_UPLOAD_RATE

# Views --------------------------------------------------------------------------------------------------

ASSISTANT_PARAMETER = OpenApiParameter("assistant", str, description="Only conversations with this assistant.")
ORIGIN_PARAMETER = OpenApiParameter(
    "origin",
    str,
    description="Only conversations begun there, comma-separated: chat (the chat page and this API), code "
    "(Assistant.run), mcp (an MCP client's tool call).",
)
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


class ViewSchema(OpenApiViewExtension):
    """Describes the view ``target_class`` names (and its subclasses) with ``described()``: the
    ``extend_schema`` of each method or action, as ``extend_schema_view`` takes them."""

    match_subclasses = True

    def described(self) -> dict[str, Any]:
        raise NotImplementedError

    def view_replacement(self) -> type:
        @extend_schema_view(**self.described())
        # The view drf-spectacular hands over at run time, a variable the checker cannot take as a base class.
        class Described(self.target):  # type: ignore[name-defined]
            pass

        return Described


class ConversationViewSetSchema(OpenApiViewExtension):
    target_class = "toolcalling.api.views.ConversationViewSet"
    match_subclasses = True

    def view_replacement(self) -> type:
        @extend_schema_view(
            list=extend_schema(
                summary="The user's conversations",
                description="Newest activity first; paginated as the site's DRF settings say.",
                parameters=[ASSISTANT_PARAMETER, ORIGIN_PARAMETER],
                responses={200: ConversationSerializer, **errors(400)},
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
            stop=extend_schema(
                summary="Stop the running turn",
                description="The turn ends at its next step (before its next model or tool call), in whichever "
                "process runs it; what it stored stays, and its stream ends with `turn_end` (`stopped: true`).",
                request=None,
                responses={202: StopResultSerializer, **errors(404, e409="not_running: no turn runs.")},
            ),
        )
        # The view drf-spectacular hands over at run time, a variable the checker cannot take as a base class.
        class Described(self.target):  # type: ignore[name-defined]
            def get_queryset(self) -> Any:
                if getattr(self, "swagger_fake_view", False):  # building the schema: there is no user
                    return Conversation.objects.none()
                return super().get_queryset()

        return Described


class MessageListViewSchema(ViewSchema):
    target_class = "toolcalling.api.views.MessageListView"

    def described(self) -> dict[str, Any]:
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
                    413,
                    429,
                    503,
                    e400=MESSAGE_ATTACHMENT_ERRORS,
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

        return dict(
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
                request=MESSAGE_BODIES,
                responses=post_responses,
            ),
        )


class ConversationEventsViewSchema(ViewSchema):
    target_class = "toolcalling.api.streams.ConversationEventsView"

    def described(self) -> dict[str, Any]:
        return dict(
            get=extend_schema(
                summary="Follow the conversation's events",
                description="Server-sent events as they happen, resumable from `after` or `Last-Event-ID`; "
                "the stream closes after EVENTS_IDLE_TIMEOUT seconds without an event (reconnect).",
                parameters=AFTER_PARAMETERS,
                responses={(200, "text/event-stream"): EVENT_STREAM, **as_json(errors(400, 404))},
            )
        )


class AssistantListViewSchema(ViewSchema):
    target_class = "toolcalling.api.views.AssistantListView"

    def described(self) -> dict[str, Any]:
        return dict(
            get=extend_schema(
                summary="The assistants this user may use",
                responses={200: AssistantSerializer(many=True), **errors()},
            )
        )


class UsageViewSchema(ViewSchema):
    target_class = "toolcalling.api.usage.UsageView"

    def described(self) -> dict[str, Any]:
        return dict(
            get=extend_schema(
                summary="The user's usage and limits",
                description="Tokens, turns and tool calls used today and this month, and each limit on the "
                "user's turns with what is used of it and when it resets.",
                responses={200: UsageSerializer, **errors()},
            )
        )


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
            settle=extend_schema(
                summary="Say what became of a call of unknown outcome",
                description="A call whose process stopped while it ran, of a tool that may not run again, waits "
                "as `outcome_unknown`: `succeeded` (with the `result` the model is told), `failed`, or `retry` "
                "(a Celery worker runs it again). Approvers for staff calls, the conversation's user for user calls.",
                request=SettleInputSerializer,
                responses={200: ApprovalToolCallSerializer, **errors(400, 404, 409, 503, e409=decided)},
            ),
        )
        # The view drf-spectacular hands over at run time, a variable the checker cannot take as a base class.
        class Described(self.target):  # type: ignore[name-defined]
            def get_queryset(self) -> Any:
                if getattr(self, "swagger_fake_view", False):
                    return ToolCall.objects.none()
                return super().get_queryset()

            def get_serializer_class(self) -> Any:
                if getattr(self, "swagger_fake_view", False):
                    return AnyToolCallSerializer
                return super().get_serializer_class()

        return Described


class ClientResultViewSchema(ViewSchema):
    target_class = "toolcalling.api.client_results.ClientResultView"

    def described(self) -> dict[str, Any]:
        decided = "already_decided: the call was answered, declined, cancelled or expired first."
        return dict(
            post=extend_schema(
                summary="Send the result of a client tool's call",
                description='A call of a tool that runs in the browser (`approver: "client"`) waits for its '
                "`result` (checked against the tool's `result_schema`) or the `error` the browser met; the "
                "conversation goes on. The conversation's user only.",
                request=ClientResultInputSerializer,
                responses={200: AnyToolCallSerializer, **errors(400, 404, 409, e409=decided)},
            )
        )


class MCPViewSchema(ViewSchema):
    target_class = "toolcalling.mcp.MCPView"

    def described(self) -> dict[str, Any]:
        return dict(
            post=extend_schema(
                summary="MCP Streamable HTTP: one JSON-RPC message (or batch) in, one JSON answer out",
                description="Serves the assistant's tools to the authenticated user; see docs/guides/mcp.md.",
                request={"application/json": JSON_RPC_MESSAGE},
                responses={
                    200: OpenApiResponse(JSON_RPC_ANSWER, description="The answer to the requests it held."),
                    202: OpenApiResponse(None, description="Only notifications: accepted, nothing to answer."),
                    400: OpenApiResponse(JSON_RPC_ANSWER, description="Not JSON, or not JSON-RPC: a JSON-RPC error."),
                    **errors(404, 501, e404="not_found: no such assistant.", e501="mcp_not_installed."),
                },
            )
        )


# The frontends' endpoints (toolcalling.frontends): their bodies are the AI SDK's and AG-UI's, described by those
# projects; here they are named, with the app's errors.


class AISDKChatViewSchema(ViewSchema):
    target_class = "toolcalling.frontends.views.AISDKChatView"

    def described(self) -> dict[str, Any]:
        busy = "conversation_busy: a turn runs, or calls await a decision."
        return dict(
            post=extend_schema(
                summary="The Vercel AI SDK's chat transport: post a message, regenerate, or answer approvals",
                request={"application/json": CHAT_REQUEST},
                responses={
                    (200, "text/event-stream"): UI_MESSAGE_STREAM,
                    **as_json(errors(400, 404, 409, 429, 503, e409=busy)),
                },  # fmt: skip
            )
        )


class AISDKStreamViewSchema(ViewSchema):
    target_class = "toolcalling.frontends.views.AISDKStreamView"

    def described(self) -> dict[str, Any]:
        return dict(
            get=extend_schema(
                summary="The AI SDK's resumeStream: the running turn's chunks from its start",
                responses={
                    (200, "text/event-stream"): UI_MESSAGE_STREAM,
                    204: OpenApiResponse(None, description="Nothing of the conversation runs."),
                    **as_json(errors(404)),
                },
            )
        )


class AGUIViewSchema(ViewSchema):
    target_class = "toolcalling.frontends.views.AGUIView"

    def described(self) -> dict[str, Any]:
        return dict(
            post=extend_schema(
                summary="An AG-UI run: a RunAgentInput in, AG-UI events out",
                request={"application/json": {"type": "object", "description": "AG-UI's RunAgentInput."}},
                responses={
                    (200, "text/event-stream"): AG_UI_EVENTS,
                    **as_json(errors(400, 404, 409, 429, 501, 503, e501="ag_ui_not_installed.")),
                },  # fmt: skip
            )
        )


class AISDKMessagesViewSchema(ViewSchema):
    target_class = "toolcalling.frontends.views.AISDKMessagesView"

    def described(self) -> dict[str, Any]:
        summary = "The history as the AI SDK's UI messages, for useChat({ messages })"
        return dict(get=extend_schema(summary=summary, responses={200: UI_MESSAGES, **as_json(errors(404))}))


class AGUIMessagesViewSchema(ViewSchema):
    target_class = "toolcalling.frontends.views.AGUIMessagesView"

    def described(self) -> dict[str, Any]:
        failed = as_json(errors(404, 501, e501="ag_ui_not_installed."))
        summary = "The history as AG-UI's MESSAGES_SNAPSHOT event"
        return dict(get=extend_schema(summary=summary, responses={200: MESSAGES_SNAPSHOT, **failed}))


# Attachments: the multipart bodies of an upload and of a message with files, the file download, and their errors.

BINARY = {"type": "string", "format": "binary"}
REFUSED = {
    "e400": f"unsupported_attachment: the bytes are not one of the allowed types ({TYPES_TEXT}); nothing stored.",
    "e413": "attachment_too_large: over ATTACHMENTS['MAX_BYTES'], refused while it was read; upload_quota_exceeded: "
    "the user's uploads not sent yet would exceed ATTACHMENTS['MAX_UNSENT'] files or ['MAX_UNSENT_BYTES'] bytes. "
    "Nothing stored.",
    "e429": f"throttled (scope toolcalling_upload, default {DEFAULT_UPLOAD_RATE}, with Retry-After); nothing stored.",
}


class AttachmentUploadViewSchema(ViewSchema):
    target_class = "toolcalling.api.attachments.AttachmentUploadView"

    def described(self) -> dict[str, Any]:
        return dict(
            post=extend_schema(
                summary="Upload a file to attach",
                description="Multipart field `file`. The upload belongs to the user; a message sends it by its "
                "`id` (`attachments`). Its `url` serves it to the owner only.",
                request={"multipart/form-data": AttachmentUploadSerializer},
                responses={201: AttachmentSerializer, **errors(400, 413, 429, **REFUSED)},
            )
        )


class AttachmentContentViewSchema(ViewSchema):
    target_class = "toolcalling.api.attachments.AttachmentContentView"

    def described(self) -> dict[str, Any]:
        return dict(
            get=extend_schema(
                summary="An attachment's file",
                description="To its owner and to staff who may view its conversation in the admin; a 404 to "
                "anyone else. Images inline, other files as a download; `X-Content-Type-Options: nosniff`.",
                responses={
                    **{
                        (200, kind): OpenApiResponse(BINARY, description="The bytes, with their real type.")
                        for kind in ATTACHMENT_TYPES
                    },
                    **{(s, "application/json"): r for s, r in errors(404).items()},
                },
            )
        )
