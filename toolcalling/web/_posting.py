"""Posting a message, the one way every edge posts one: the turn of the conversation's assistant for the request's
user, the rule on files and background turns, and the files of a message refused before it was stored."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.utils.translation import gettext as _
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request

from ..engine import Turn
from ..exceptions import AssistantUnavailable, NotRegistered
from ..models import Attachment, Conversation
from ..toolkit import assistants


def turn_for(request: Request, conversation: Conversation, *, stream: bool) -> Turn:
    """A turn of the conversation's assistant for the request's user: 409 when that assistant no longer exists,
    403 when the user may not use it. Every endpoint that posts a message (the frontends' too) starts here."""
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


def no_files_in_background(background: bool, files: bool) -> None:
    """A message with files runs in the request, never on a worker: the one rule every way of posting a message
    (the messages endpoint, the AI SDK's) checks the same way."""
    if background and files:
        raise ValidationError({"attachments": [_("A message with attachments cannot run in the background.")]})


@contextmanager
def kept_only_if_taken(attachments: Sequence[Attachment], *, named: Sequence[Any] = ()) -> Iterator[None]:
    """A message refused before it is stored (busy, a usage limit, the queue down) keeps none of the files it
    brought: they are deleted again (their files with them). The uploads it ``named`` by id stay their owner's
    to send. The files are stored before the turn claims the conversation, since the claim stores the message
    and gives it its files in one transaction; a file given to a stored message stays."""
    try:
        yield
    except BaseException:
        named_ids = {str(pk) for pk in named}
        brought = [a.pk for a in attachments if str(a.pk) not in named_ids]
        if brought:
            Attachment.objects.filter(pk__in=brought, message__isnull=True).delete()
        raise
