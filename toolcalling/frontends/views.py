"""The frontend endpoints: ``ai-sdk/chat/`` and ``ai-sdk/chat/{id}/stream`` (the Vercel AI SDK's chat transport),
and ``ag-ui/`` (AG-UI's ``RunAgentInput``).

They post messages the one way every edge does (``web.MessagePost``): the same checks, turn, throttle, claim,
usage limits and event stream as ``POST conversations/{id}/messages/``; only the wire format of the answer differs
(a ``streaming.Renderer``).
Clients that ask for ``Accept: text/event-stream`` (AG-UI's do) get their errors as JSON all the same.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, HttpResponseBase
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import streaming
from ..models import Conversation
from ..web import (
    DatabaseGuard,
    ErrorResponses,
    EventStreamMixin,
    MessagePost,
    PostsMessages,
    is_asgi,
    messages_queryset,
)
from . import _ag_ui as ag_ui
from ._ai_sdk import HEADER, VERSION, UIMessageStream, ui_messages
from ._client_tools import ag_ui_outputs, ai_sdk_outputs, apply_outputs, keep_frontend_tools, last_parts
from ._requests import (
    ChatRequestSerializer,
    apply_answers,
    awaiting_staff,
    conversation_of,
    moving,
    read_request,
    turn_start,
)


def _ai_sdk(response: HttpResponseBase) -> HttpResponseBase:
    response[HEADER] = VERSION
    return response


def _follow(
    conversation_id: Any,
    after: int,
    renderer: streaming.Renderer,
    request: Request,
    *,
    protocol: bool = True,
    wait_for_staff: bool = False,
) -> HttpResponseBase:
    """The conversation's events after ``after`` until a turn ends, or until nothing of it moves any more
    (``protocol``: with the AI SDK's header; ``wait_for_staff``: a staff decision still to come counts as moving,
    so the stream waits for it and its continuation, up to ``EVENTS_IDLE_TIMEOUT`` without an event)."""

    def finished() -> bool:
        return not moving(conversation_id) and not (wait_for_staff and awaiting_staff(conversation_id))

    guarded = DatabaseGuard(renderer)  # its renderer reads the database, which may go away meanwhile
    follower = streaming.Follower(after, until=lambda e: e.type == "turn_end", finished=finished, renderer=guarded)
    response = streaming.sse_response(conversation_id, follower, asgi=is_asgi(request))
    return _ai_sdk(response) if protocol else response


class AISDKChatView(PostsMessages, APIView):
    """``POST ai-sdk/chat/``: what ``DefaultChatTransport({api: ".../ai-sdk/chat"})`` sends. The chat ``id`` is a
    conversation of this user (else 404); the last user message's text is posted, ``regenerate-message`` posts
    the last user message again, and approval answers (``addToolApprovalResponse``) decide the user's own calls.
    The answer is the UI message stream of the turn (``x-vercel-ai-ui-message-stream: v1``)."""

    permission_classes = [IsAuthenticated]

    def post(self, request: Request) -> HttpResponseBase:
        body = ChatRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        conversation = conversation_of(request.user, body.validated_data["id"])
        wanted = read_request(body.validated_data, conversation)
        if wanted.content is None:
            # Answers to approval requests: decided before reading on, so the stream carries their outcome.
            after = streaming.last_seq(conversation.pk)
            apply_outputs(conversation, request.user, ai_sdk_outputs(last_parts(body.validated_data)))
            again = apply_answers(conversation, request.user, wanted.answers)
            renderer = UIMessageStream(conversation.pk, user=request.user, known=wanted.shown, waiting=again)
            return _follow(conversation.pk, after, renderer, request)
        data = {"content": wanted.content, "background": wanted.background}
        post = MessagePost(request, conversation, data, files=wanted.files, streamed=True)
        renderer = UIMessageStream(conversation.pk, user=request.user, names_answer=True)
        if post.background:
            return _follow(conversation.pk, post.queue(), renderer, request)
        return _ai_sdk(post.stream(renderer))


class AISDKStreamView(ErrorResponses, EventStreamMixin, APIView):
    """``GET ai-sdk/chat/{id}/stream``: the SDK's ``resumeStream``. This is how a staff decision's continuation
    reaches the chat: while calls wait for staff only, the stream waits with the page for the decision and
    follows what it starts (the call's outcome, the model's answer) to the turn's end; while a turn runs, its
    events from its start (a replay, as the SDK expects) to its end. A 204 when nothing of the conversation
    runs or waits for staff (a page that missed a turn reads it from ``ai-sdk/chat/{id}/messages``)."""

    permission_classes = [IsAuthenticated]

    def get(self, request: Request, chat_id: str) -> HttpResponseBase:
        conversation = conversation_of(request.user, chat_id)
        if moving(conversation.pk):
            renderer = UIMessageStream(conversation.pk, user=request.user)
            return _follow(conversation.pk, turn_start(conversation.pk), renderer, request)
        if conversation.status == Conversation.Status.AWAITING_APPROVAL and awaiting_staff(conversation.pk):
            # The page has the turn that asked (it ended at its turn_end): only what the decision starts is new.
            renderer = UIMessageStream(conversation.pk, user=request.user, held=True)
            return _follow(conversation.pk, streaming.last_seq(conversation.pk), renderer, request, wait_for_staff=True)
        return _ai_sdk(HttpResponse(status=204))


class AGUIView(PostsMessages, APIView):
    """``POST ag-ui/``: an AG-UI ``RunAgentInput`` whose ``threadId`` is a conversation of this user. The last
    user message is posted (or, with ``resume``, the user's answers to the last run's interrupts are applied;
    with no messages at all, the run is the thread's ``MESSAGES_SNAPSHOT``); the answer is the run as AG-UI
    events. The client's own ``tools`` are offered as client tools only when the assistant allows it
    (``accept_frontend_tools``), never under a server tool's name; a run whose last messages are tool messages
    sends the results of those tools' calls (see ``_client_tools``)."""

    permission_classes = [IsAuthenticated]

    def post(self, request: Request) -> HttpResponseBase:
        run = ag_ui.read_input(request.data)
        conversation = conversation_of(request.user, run.thread_id)
        renderer = ag_ui.AGUIStream(conversation.pk, thread_id=run.thread_id, run_id=run.run_id, user=request.user)
        keep_frontend_tools(conversation, [tool.model_dump(mode="json") for tool in run.tools or ()])
        if outputs := ag_ui_outputs(run):
            # The frontend's results of the calls its tools were asked for: stored, then the run follows the rest.
            after = streaming.last_seq(conversation.pk)
            apply_outputs(conversation, request.user, outputs)
            return _follow(conversation.pk, after, renderer, request, protocol=False)
        if run.resume:
            # Answers to the interrupts of the run before: decided first, then the run follows what they started.
            # A staff call's interrupt resumed (the browser cannot decide it): the run waits for staff's decision
            # and follows what it starts, as the AI SDK's resumeStream does.
            after = streaming.last_seq(conversation.pk)
            again = apply_answers(conversation, request.user, ag_ui.answers(run))
            wait = bool(again) and awaiting_staff(conversation.pk)
            return _follow(conversation.pk, after, renderer, request, protocol=False, wait_for_staff=wait)
        if not run.messages:
            # Connecting to a thread: what it holds (MESSAGES_SNAPSHOT), and its calls still waiting as the outcome.
            snapshot = ag_ui.snapshot(messages_queryset(conversation), user=request.user,
                                      absolute=request.build_absolute_uri)  # fmt: skip
            body = renderer.opening(0) + renderer.emit_event(snapshot) + renderer.closing()
            return HttpResponse(body, content_type=f"{ag_ui.MEDIA_TYPE}; charset=utf-8")
        post = MessagePost(request, conversation, {"content": ag_ui.last_user_text(run)}, streamed=True)
        return post.stream(renderer)


class AISDKMessagesView(ErrorResponses, APIView):
    """``GET ai-sdk/chat/{id}/messages``: the conversation's stored messages as the SDK's ``UIMessage`` list, so
    ``useChat({ id, messages })`` starts where the conversation is (a page opened later, or reloaded, shows
    what happened meanwhile: a staff decision and its continuation too). The owner's only, as the chat is."""

    permission_classes = [IsAuthenticated]

    def get(self, request: Request, chat_id: str) -> Response:
        conversation = conversation_of(request.user, chat_id)
        metadata = {"toolcalling": {"conversation": str(conversation.pk), "status": conversation.status}}
        found = ui_messages(messages_queryset(conversation), user=request.user, metadata=metadata,
                            absolute=request.build_absolute_uri)  # fmt: skip
        return Response(found)


class AGUIMessagesView(ErrorResponses, APIView):
    """``GET ag-ui/{threadId}/messages``: the conversation's stored messages as AG-UI's ``MESSAGES_SNAPSHOT``
    event (JSON), for a client that opens a thread it ran before. The owner's only."""

    permission_classes = [IsAuthenticated]

    def get(self, request: Request, thread_id: str) -> Response:
        conversation = conversation_of(request.user, thread_id)
        event = ag_ui.snapshot(messages_queryset(conversation), user=request.user, absolute=request.build_absolute_uri)
        return Response(event.model_dump(mode="json", by_alias=True, exclude_none=True))
