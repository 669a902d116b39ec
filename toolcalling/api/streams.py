"""``GET conversations/{id}/events/`` and the answer to a background turn: where to follow it.

The streamed and queued turns themselves run as every edge runs them (``toolcalling.web``).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.translation import gettext as _
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import streaming
from ..models import Conversation
from ..web import ErrorResponses, EventStreamMixin, is_asgi


def background_answer(request: Request, conversation: Conversation, after: int) -> Response:
    """The answer to a turn queued for a worker (``web.MessagePost.queue``): 202 with where to follow it from
    ``after``."""
    # With eager Celery the turn has run by now (and may even have seen its conversation deleted).
    now = Conversation.objects.filter(pk=conversation.pk).values_list("status", flat=True).first()
    url = reverse("toolcalling:conversation-events", kwargs={"pk": conversation.pk})
    return Response(
        {"status": now, "events": f"{request.build_absolute_uri(url)}?after={after}", "after": after},
        status=status.HTTP_202_ACCEPTED,
    )


class ConversationEventsView(ErrorResponses, EventStreamMixin, APIView):
    """``GET conversations/{id}/events/``: the conversation's events as SSE, from ``Last-Event-ID`` or
    ``?after=`` (default: only new events); closes after ``EVENTS_IDLE_TIMEOUT`` without an event."""

    permission_classes = [IsAuthenticated]

    def get(self, request: Request, pk: Any) -> HttpResponseBase:
        conversation = get_object_or_404(Conversation, pk=pk, user=request.user)
        requested = self.requested_after(request)
        after = streaming.resume_point(conversation.pk, requested)
        return streaming.sse_response(conversation.pk, streaming.Follower(after), asgi=is_asgi(request))

    @staticmethod
    def requested_after(request: Request) -> int | None:
        # The header wins: a reconnecting EventSource sends it and keeps the URL it first opened.
        raw = request.META.get("HTTP_LAST_EVENT_ID") or request.query_params.get("after")
        if raw is None or raw == "":
            return None
        try:
            value = int(raw)
        except ValueError:
            value = -1
        if value < 0:
            text = _("Expected an event id (a whole number, 0 or more), not %(value)s.") % {"value": repr(raw)}
            raise ValidationError({"after": [text]})
        return value
