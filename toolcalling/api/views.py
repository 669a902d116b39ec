"""REST endpoints: assistants, conversations, their messages (a POST runs a turn) and tool calls.

Errors are raised, never built here: ``errors`` gives them the API's one shape."""

from __future__ import annotations

from typing import Any

from django.db import connections, router
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponseBase, JsonResponse
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from rest_framework import generics, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from .. import approval
from ..approval import can_approve
from ..engine import stop_turn
from ..exceptions import InvalidArguments, NothingWaiting
from ..models import Conversation, Message, ToolCall
from ..storage import get_as_built
from ..toolkit import assistants
from ..web import (
    ErrorResponses,
    MessagePost,
    MessageSerializer,
    PostsMessages,
    ToolCallSerializer,
    accepts_event_stream,
    messages_json,
    messages_queryset,
    on_turn_loop,
)
from .attachments import Uploads
from .deferred import TurnResponse
from .pagination import MessageCursorPagination
from .serializers import (
    ApprovalToolCallSerializer,
    ApproveInputSerializer,
    ConversationSerializer,
    RejectInputSerializer,
    SettleInputSerializer,
)
from .streams import background_answer


class AssistantListView(ErrorResponses, APIView):
    """The assistants this user may talk to."""

    permission_classes = [IsAuthenticated]

    def get(self, request: Request) -> Response:
        items = []
        for assistant_cls in assistants.all():
            assistant = assistant_cls()
            if assistant.has_permission(request.user):
                items.append({"id": assistant.id, "name": assistant.name, "description": assistant.description})
        return Response(items)


class ConversationViewSet(
    ErrorResponses,
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """The user's own conversations, newest activity first (``?assistant=`` keeps one assistant's, ``?origin=chat``
    those begun on the chat page or the API, as ``?origin=code,mcp`` the others); another
    user's conversation is a 404. The list follows the site's DRF pagination."""

    serializer_class = ConversationSerializer
    permission_classes = [IsAuthenticated]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Conversation]:
        queryset = Conversation.objects.filter(user=self.request.user)  # type: ignore[misc]  # IsAuthenticated
        if self.action != "list":
            return queryset
        assistant = self.request.query_params.get("assistant")
        if assistant:
            queryset = queryset.filter(assistant_id=assistant)
        text = _("Unknown origin %(unknown)s; one of %(valid)s.")
        origins = wanted(self.request, "origin", Conversation.Origin.values, text)
        if origins:
            queryset = queryset.filter(origin__in=origins)
        return queryset

    def perform_create(self, serializer: BaseSerializer[Any]) -> None:
        serializer.save(user=self.request.user)

    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: Any = None) -> Response:
        """Cancel the calls still awaiting approval; the conversation can take a new message again."""
        conversation = self.get_object()
        cancelled = approval.cancel_waiting(conversation, request.user)
        if not cancelled:
            raise NothingWaiting(status=conversation.status)
        return Response({"status": conversation.status, "cancelled": ToolCallSerializer(cancelled, many=True).data})

    @action(detail=True, methods=["post"])
    def stop(self, request: Request, pk: Any = None) -> Response:
        """Stop the running turn at its next step, in whichever process runs it (409 when none runs)."""
        conversation = self.get_object()
        stop_turn(conversation)
        return Response({"status": conversation.status, "stop_requested": True}, status=status.HTTP_202_ACCEPTED)


def own_conversation(request: Request, pk: Any) -> Conversation:
    """The request's user's conversation ``pk`` (anyone else's is a 404), its user known without reading it
    again: the request's. Read as SQL the ORM built once (``get_as_built``): every request of a conversation
    reads it."""
    using, user_id = router.db_for_read(Conversation), request.user.pk
    connection, fields = connections[using], Conversation._meta
    conversation = None
    if user_id is not None:  # a user (IsAuthenticated lets nobody else through)
        where = (  # ``filter()`` takes its lookups in the order of their names
            fields.pk.get_db_prep_value(pk, connection),
            fields.get_field("user").get_db_prep_value(user_id, connection),
        )
        conversation = get_as_built(
            Conversation,
            using,
            filtered=lambda: Conversation.objects.using(using).filter(pk=pk, user_id=user_id)[:1],
            filter_name="own conversation",
            where=where,
        )
    if conversation is None:
        raise Http404(f"No {fields.object_name} matches the given query.")  # get_object_or_404's words, untranslated
    conversation.user = request.user  # type: ignore[assignment]  # IsAuthenticated: a user, not AnonymousUser
    return conversation


class MessageListView(PostsMessages, Uploads, generics.GenericAPIView):
    """``GET`` the history; ``POST {"content": ...}`` runs a turn and answers with the new messages.

    With ``Accept: text/event-stream`` the turn is streamed as server-sent events; with
    ``"background": true`` it runs on a Celery worker and the answer is 202 (see ``streaming``).
    The history is the whole list unless ``?cursor=`` or ``?page_size=`` ask for pages. A POST posts the message as
    every edge does (``web.MessagePost``) and is also throttled by ``TurnRateThrottle`` (scope ``toolcalling_turn``):
    it is what spends model tokens.
    """

    permission_classes = [IsAuthenticated]
    serializer_class = MessageSerializer
    pagination_class = MessageCursorPagination

    def get(self, request: Request, pk: Any) -> Response:
        conversation = own_conversation(request, pk)
        queryset = messages_queryset(conversation)
        context = {"request": request}  # lets a waiting call the user confirms carry its preview
        paginator = self.paginator
        if isinstance(paginator, MessageCursorPagination) and paginator.is_requested(request):
            page = paginator.paginate_queryset(queryset, request, view=self)
            return paginator.get_paginated_response(MessageSerializer(page, many=True, context=context).data)
        return Response(MessageSerializer(queryset, many=True, context=context).data)

    def post(self, request: Request, pk: Any) -> HttpResponseBase:
        conversation = own_conversation(request, pk)
        streamed = accepts_event_stream(request)
        post = MessagePost(request, conversation, request.data, files=request.FILES.getlist("files"), streamed=streamed)

        def answer(messages: list[Message]) -> Response:
            shown = messages_json(messages)
            # The waiting calls once more, with what the request's user may see of them (a preview): only when the
            # messages show one, not a serializer built for an empty list on every turn.
            waiting = ToolCall.Status.AWAITING_APPROVAL
            awaiting: Any = []  # a list, as .data of many=True is (DRF's stubs type it as a dict)
            if any(call["status"] == waiting for shown_message in shown for call in shown_message["tool_calls"]):
                calls = [c for m in messages for c in m.tool_calls.all() if c.status == waiting]
                awaiting = ToolCallSerializer(calls, many=True, context={"request": request}).data
            return Response(
                {
                    "status": conversation.status,
                    "stopped": post.turn.view.stopped,
                    "messages": shown,
                    "awaiting_approval": awaiting,
                },
                status=status.HTTP_201_CREATED,
            )

        if post.background:
            return background_answer(request, conversation, post.queue())
        if streamed:
            return post.stream()
        if on_turn_loop(request, post.turn):  # the answer rendered when the turn ends: no thread waits for the model
            with post.claiming():
                return TurnResponse(self, post.turn, post.content, answer)
        return answer(post.run())


@csrf_exempt  # it changes nothing; a CSRF failure page would hide the 404 from API clients
def unknown_path(request: HttpRequest, path: str = "") -> JsonResponse:
    """A path under the API's resources that no view takes (an id that is not one): a 404 in the API's shape,
    not the site's HTML page. A plain view, so API schemas leave it out."""
    body = {"detail": str(NotFound.default_detail), "code": NotFound.default_code, "status": None}
    return JsonResponse(body, status=404)


class ToolCallViewSet(ErrorResponses, viewsets.ReadOnlyModelViewSet):
    """Tool calls, filtered by ``?status=``: approvers see all, others their own. Approvers decide staff
    calls, the conversation's user decides calls marked ``approver="user"``; others get a 403, or a 404 for a
    call they may not even see."""

    permission_classes = [IsAuthenticated]

    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: Any = None) -> Response:
        """Approve (confirm) a waiting call, optionally with edited ``arguments``; a worker runs it."""
        data = ApproveInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        call = self.get_object()
        try:
            approval.approve(call, request.user, data.validated_data.get("arguments"))
        except InvalidArguments as exc:
            raise ValidationError({"arguments": [str(exc)]})
        call.refresh_from_db()
        return Response(self.get_serializer(call).data)

    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: Any = None) -> Response:
        """Reject (decline) a waiting call with a ``reason`` the model is told."""
        data = RejectInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        call = self.get_object()
        approval.reject(call, request.user, data.validated_data["reason"])
        call.refresh_from_db()
        return Response(self.get_serializer(call).data)

    @action(detail=True, methods=["post"])
    def settle(self, request: Request, pk: Any = None) -> Response:
        """Say what became of a call whose process stopped while it ran (``outcome_unknown``): ``succeeded``
        with the ``result`` the model is told, ``failed``, or ``retry``; the conversation goes on from it."""
        data = SettleInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        call = self.get_object()
        approval.settle(call, request.user, data.validated_data["outcome"], data.validated_data["result"])
        call.refresh_from_db()
        return Response(self.get_serializer(call).data)

    def get_serializer_class(self) -> type[ToolCallSerializer]:
        return ApprovalToolCallSerializer if can_approve(self.request.user) else ToolCallSerializer

    def get_queryset(self) -> QuerySet[ToolCall]:
        queryset = ToolCall.objects.select_related("conversation__user").order_by("-created_at", "-id")
        # Decisions too find only the calls this user may see: another user's call id is a 404 like a missing
        # one (sequential ids would otherwise tell which calls exist). A call the user sees but may not decide
        # (a staff call of their own conversation) is a 403 that says why (approval.refusal).
        if not can_approve(self.request.user):
            queryset = queryset.filter(conversation__user=self.request.user)  # type: ignore[misc]  # IsAuthenticated
        statuses = wanted(
            self.request, "status", ToolCall.Status.values, _("Unknown status %(unknown)s; one of %(valid)s.")
        )
        if statuses:
            queryset = queryset.filter(status__in=statuses)
        return queryset


def wanted(request: Request, name: str, valid: list[str], unknown_text: str) -> list[str]:
    """The comma-separated values of the query parameter ``name`` (none: no filter); a value not in ``valid`` is a
    400 that lists the valid ones."""
    values = [v for v in request.query_params.get(name, "").split(",") if v]
    unknown = [v for v in values if v not in valid]
    if unknown:
        raise ValidationError({name: [unknown_text % {"unknown": ", ".join(unknown), "valid": ", ".join(valid)}]})
    return values
