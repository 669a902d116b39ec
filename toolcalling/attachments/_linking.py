"""Joining uploads to the user message that carries them: only the sender's own uploads no message took yet."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.utils.translation import gettext as _

from ..exceptions import AttachmentTooLarge, TooManyAttachments, UnknownAttachment
from ..models import Attachment, Message
from ._storing import attachment_settings, human_size, store


def sendable(
    user: Any, ids: Sequence[Any], *, more: int = 0, more_bytes: int = 0, status: str | None = None
) -> list[Attachment]:
    """The uploads ``ids`` names, in that order, if each is ``user``'s own and not yet sent; else the error.
    ``more``, ``more_bytes``: files the message brings besides, counted against ``MAX_PER_MESSAGE`` and
    ``MAX_BYTES_PER_REQUEST`` too (a message whose files one request could not carry would never be seen).

    Another user's id is refused like a missing one, so ids tell nobody which uploads exist."""
    limits = attachment_settings()
    unique = list(dict.fromkeys(str(i) for i in ids))
    if len(unique) + more > limits["MAX_PER_MESSAGE"]:
        raise TooManyAttachments(
            _("A message may carry at most %(limit)d attachments.") % {"limit": limits["MAX_PER_MESSAGE"]},
            status=status,
        )
    # Most messages name no upload: no query is built for them.
    named = Attachment.objects.filter(pk__in=unique, user=user, message__isnull=True) if unique else []
    found = {str(a.pk): a for a in named}
    if len(found) != len(unique):
        raise UnknownAttachment(status=status)
    if sum(a.size for a in found.values()) + more_bytes > limits["MAX_BYTES_PER_REQUEST"]:
        raise AttachmentTooLarge(
            _("The files of one message may add up to at most %(size)s.")
            % {"size": human_size(limits["MAX_BYTES_PER_REQUEST"])},
            status=status,
        )
    return [found[i] for i in unique]


def carried(
    user: Any, ids: Sequence[Any], uploads: Sequence[UploadedFile], *, status: str | None = None
) -> list[Attachment]:
    """What a posted message carries: the uploads it names by id (``sendable``) and the files it brings, stored
    here. The ids, the count and the bytes are checked before any file is stored."""
    named = sendable(user, ids, more=len(uploads), more_bytes=sum(u.size or 0 for u in uploads), status=status)
    return [*named, *(store(upload, user) for upload in uploads)]


def attach(message: Message, attachments: Sequence[Attachment]) -> None:
    """Give the uploads to ``message`` (inside the transaction that stores it): a conditional update, so an
    upload a parallel message took meanwhile fails this one (``UnknownAttachment``, the message rolled back)."""
    if not attachments:  # it carries none: reading its files later (its history entry, its JSON) needs no query
        message.has_none("attachments")
        return
    conversation = message.conversation
    taken = Attachment.objects.filter(
        pk__in=[a.pk for a in attachments], user_id=conversation.user_id, message__isnull=True
    ).update(message=message, conversation=conversation)
    if taken != len(attachments):
        raise UnknownAttachment(status=conversation.status)
    for attachment in attachments:
        attachment.message, attachment.conversation = message, conversation
