"""What tools see of attachments (``ctx.attachments``), and who may read an attachment's file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from ._storing import attachment_storage

if TYPE_CHECKING:
    from ..models import Attachment, Conversation


@dataclass(frozen=True, kw_only=True)
class AttachedFile:
    """One file of the conversation, as a tool reads it."""

    id: str
    name: str
    """The user's file name (only shown; the file is stored under a generated name)."""
    content_type: str
    """What the bytes are (``image/png``, ``application/pdf``...), read from the bytes."""
    size: int
    """In bytes."""
    storage_name: str

    def open(self, mode: str = "rb") -> IO[bytes]:
        """The file from the site's storage, for reading (``with file.open() as f: data = f.read()``)."""
        return attachment_storage().open(self.storage_name, mode)

    @classmethod
    def of(cls, attachment: Attachment) -> AttachedFile:
        return cls(id=str(attachment.pk), name=attachment.name, content_type=attachment.content_type,
                   size=attachment.size, storage_name=attachment.storage_name)  # fmt: skip


def conversation_files(conversation: Conversation | None) -> list[AttachedFile]:
    """The files the conversation's messages carry, oldest first."""
    if conversation is None or conversation.pk is None:
        return []
    return [AttachedFile.of(a) for a in conversation.attachments.filter(message__isnull=False).order_by("created_at")]


def may_read(user: Any, attachment: Attachment) -> bool:
    """Its owner may; so may active staff who may view its conversation in the admin (view or change
    permission). Nobody else, not even to learn that it exists."""
    if not getattr(user, "is_authenticated", False):
        return False
    if attachment.user_id == user.pk:
        return True
    if attachment.conversation_id is None or not (user.is_active and user.is_staff):
        return False
    return user.has_perm("toolcalling.view_conversation") or user.has_perm("toolcalling.change_conversation")
