"""Posting a message, the one way every edge posts one: ``POST conversations/{id}/messages/``, the AI SDK's chat and
AG-UI's run check the message, find the turn and keep or drop its files here, and are throttled alike."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.db import InterfaceError, OperationalError
from django.http import HttpResponseBase
from django.utils.translation import gettext as _
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request

from .. import streaming
from ..attachments import carried
from ..engine import Turn
from ..exceptions import AssistantUnavailable, DatabaseUnavailable, NotRegistered
from ..models import Attachment, Conversation, Message
from ..toolkit import assistants
from ._errors import ErrorResponses
from ._serializers import MessageInputSerializer
from ._streams import EventStreamMixin, queue_turn, stream_turn
from ._throttling import TurnRateThrottle


class MessagePost:
    """A message posted to a conversation, checked and ready to run: its input as the messages endpoint takes it
    (``content``, ``background``, ``attachments``: the ids of the user's uploads), then no files with a
    background turn, then the conversation's assistant and the request user's right to it (409, 403), and only
    then the files it carries, stored for the ``turn``. A refusal before the turn runs stores nothing.

    The turn then runs in the request (``run``), streams (``stream``) or is queued for a worker (``queue``); a
    message refused there (busy, a usage limit, the queue down) keeps none of the files it brought."""

    def __init__(
        self,
        request: Request,
        conversation: Conversation,
        data: Any,
        *,
        files: Sequence[UploadedFile] = (),
        streamed: bool = False,
    ) -> None:
        message = MessageInputSerializer(data=data)
        message.is_valid(raise_exception=True)
        self.request = request
        self.content: str = message.validated_data["content"]
        self.background: bool = message.validated_data["background"]
        self.named: list[Any] = message.validated_data["attachments"]
        # A message with files runs in the request, never on a worker (any file of the body counts).
        if self.background and (self.named or files or request.FILES):
            raise ValidationError({"attachments": [_("A message with attachments cannot run in the background.")]})
        self.turn = _turn_for(request, conversation, stream=streamed or self.background)
        # Once the assistant and the user's right to it are known: files are only stored for a turn that runs.
        self.turn.attachments = carried(request.user, self.named, files, status=conversation.status)

    def run(self) -> list[Message]:
        """Run the turn in the request; its new messages."""
        with self.claiming():
            return self.turn.run(self.content)

    def stream(self, renderer: streaming.Renderer | None = None) -> HttpResponseBase:
        """The turn's events as server-sent events (the app's own unless a frontend protocol's ``renderer``)."""
        with self.claiming():
            return stream_turn(self.request, self.turn, self.content, renderer)

    def queue(self) -> int:
        """Queue the turn for a worker; the number of the stream's last event before it, to follow it from."""
        with self.claiming():
            return queue_turn(self.turn, self.content)

    @contextmanager
    def claiming(self) -> Iterator[None]:
        """Around the turn's claim of the conversation: a message refused there (busy, a usage limit, the queue
        down) keeps none of the files it brought; they are deleted again (their files with them). The uploads it
        named by id stay their owner's to send. The files are stored before the claim, since the claim stores the
        message and gives it its files in one transaction; a file given to a stored message stays. A database
        lost after the message was stored is answered as such (``database_lost``)."""
        try:
            yield
        except BaseException as exc:
            error = database_lost(self.turn, exc) if isinstance(exc, Exception) else exc
            if error is not exc:
                raise error from exc  # its message, with its files, is stored
            self._drop_files()
            raise

    def _drop_files(self) -> None:
        """Delete the files this message brought that no stored message took (the uploads it named stay)."""
        named_ids = {str(pk) for pk in self.named}
        brought = [a.pk for a in self.turn.attachments if str(a.pk) not in named_ids]
        if brought:
            Attachment.objects.filter(pk__in=brought, message__isnull=True).delete()


def database_lost(turn: Turn, exc: Exception) -> Exception:
    """What to answer for ``exc``, an error of ``turn``: when the database went away after the turn stored the
    user's message, a ``DatabaseUnavailable`` that says the message was stored, so the client does not send it a
    second time; else ``exc`` itself (``exception_handler`` answers a lost database as a message not taken)."""
    if not isinstance(exc, (OperationalError, InterfaceError)) or not turn.new_messages:
        return exc
    error = DatabaseUnavailable(
        _(
            "Your message was stored, but the database went away before the answer to it could be stored. The "
            "conversation's history shows what was kept; try again later."
        )
    )
    error.__cause__ = exc
    return error


def _turn_for(request: Request, conversation: Conversation, *, stream: bool) -> Turn:
    """A turn of the conversation's assistant for the request's user: 409 when that assistant no longer exists,
    403 when the user may not use it."""
    try:
        assistant = assistants.get(conversation.assistant_id)()
    except NotRegistered:
        raise AssistantUnavailable(
            _("The assistant %(assistant)s of this conversation no longer exists.")
            % {"assistant": repr(conversation.assistant_id)},
            status=conversation.status,
        )
    if not assistant.has_permission(request.user):
        raise PermissionDenied(_("You may not use this assistant."))
    return Turn(assistant, conversation, user=request.user, stream=stream)


class PostsMessages(ErrorResponses, EventStreamMixin):
    """Mixed into every view whose POST posts a message (the messages endpoint, the AI SDK's chat, AG-UI's run):
    the app's error shape, JSON errors for a client that asks for an event stream, and on a POST the turn
    throttle (``TurnRateThrottle``, scope ``toolcalling_turn``) on top of the view's own throttles."""

    def get_throttles(self) -> list[Any]:
        # super() reaches the DRF view this is mixed into, which the checker cannot see here.
        throttles: list[Any] = super().get_throttles()  # type: ignore[misc]
        return [*throttles, TurnRateThrottle()] if self.request.method == "POST" else throttles  # type: ignore[attr-defined]
