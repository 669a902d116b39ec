"""Storing uploads: an upload handler that refuses a file by its bytes and by its size while it is read, the
storage write under a generated name, and the storage delete once a deleted row is committed."""

from __future__ import annotations

import uuid
from functools import partial
from typing import Any

from django.core.files.storage import Storage, storages
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from ..conf import toolcalling_settings
from ..exceptions import AttachmentTooLarge, UnsupportedAttachment
from ..models import Attachment
from ._sniffing import HEAD_BYTES, SUFFIXES, sniff

NAME_LENGTH = 255  # of Attachment.name


def attachment_settings() -> dict[str, Any]:
    return toolcalling_settings.ATTACHMENTS


def attachment_storage() -> Storage:
    """The storage of ``ATTACHMENTS["STORAGE"]`` (a ``STORAGES`` alias; the checks report one that is missing)."""
    return storages[attachment_settings()["STORAGE"]]


class SniffedFile(TemporaryUploadedFile):
    """An upload on its way to storage, with the type its bytes showed."""

    sniffed_type: str = ""


class AttachmentUploadHandler(FileUploadHandler):
    """Takes every file of a multipart body: the first bytes must be an allowed type (else
    ``UnsupportedAttachment``) and the file at most ``MAX_BYTES`` (else ``AttachmentTooLarge``), both decided
    while the body is read, before anything reaches storage. Files go to a temporary file, never into memory
    whole, which storage then moves or copies in chunks."""

    def __init__(self, request: Any = None) -> None:
        super().__init__(request)
        limits = attachment_settings()
        self.max_bytes: int = limits["MAX_BYTES"]
        self.types: list[str] = list(limits["TYPES"])
        self.head = b""
        self.received = 0
        self.target: SniffedFile | None = None
        self.opened: list[SniffedFile] = []

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.head, self.received, self.target = b"", 0, None

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        self.received += len(raw_data)
        if self.received > self.max_bytes:
            self.refuse(AttachmentTooLarge(too_large_text(self.max_bytes)))
        if self.target is None:
            self.head += raw_data
            if len(self.head) >= HEAD_BYTES:
                self._open()
            return None
        self.target.write(raw_data)
        return None

    def file_complete(self, file_size: int) -> UploadedFile:
        if self.target is None:  # a file shorter than the head
            self._open()
        assert self.target is not None
        self.target.seek(0)
        self.target.size = file_size
        return self.target

    def upload_interrupted(self) -> None:
        self.close_all()

    def _open(self) -> None:
        kind = sniff(self.head)
        if kind is None or kind not in self.types:
            self.refuse(UnsupportedAttachment())
        self.target = SniffedFile(self.file_name or "", kind, 0, self.charset, self.content_type_extra)
        self.target.sniffed_type = kind or ""
        self.opened.append(self.target)
        self.target.write(self.head)
        self.head = b""

    def refuse(self, error: Exception) -> None:
        """Drop what this request received so far (its temporary files) and answer with ``error``."""
        self.close_all()
        raise error

    def close_all(self) -> None:
        for opened in self.opened:
            opened.close()  # a temporary file is removed when closed
        self.opened.clear()


def too_large_text(max_bytes: int) -> str:
    return _("The file is too large to attach: at most %(size)s.") % {"size": human_size(max_bytes)}


def human_size(size: int) -> str:
    """A byte count as people read it: 512 B, 300 KiB, 20 MiB."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KiB"
    return f"{size / (1024 * 1024):.3g} MiB"


def store(upload: UploadedFile, user: Any) -> Attachment:
    """Write a checked upload to storage under a generated name and record it, owned by ``user``.

    A file that did not come through ``AttachmentUploadHandler`` (a test's, a site's own code) is checked here
    the same way. If the row cannot be written the stored file is removed again."""
    kind = getattr(upload, "sniffed_type", "") or check(upload)
    now = timezone.now()
    name = f"toolcalling/attachments/{now:%Y/%m}/{uuid.uuid4().hex}{SUFFIXES[kind]}"
    storage = attachment_storage()
    upload.seek(0)
    stored = storage.save(name, upload)
    try:
        return Attachment.objects.create(
            user=user,
            storage_name=stored,
            name=shown_name(upload.name),
            content_type=kind,
            size=upload.size or 0,
        )
    except BaseException:
        storage.delete(stored)
        raise


def check(upload: UploadedFile) -> str:
    """The allowed type of a file read from its first bytes and its size, or the error refusing it."""
    limits = attachment_settings()
    if (upload.size or 0) > limits["MAX_BYTES"]:
        raise AttachmentTooLarge(too_large_text(limits["MAX_BYTES"]))
    upload.seek(0)
    kind = sniff(upload.read(HEAD_BYTES))
    if kind is None or kind not in limits["TYPES"]:
        raise UnsupportedAttachment()
    return kind


def shown_name(name: str | None) -> str:
    """The user's file name as it is shown: its last path part, without control characters, cut to fit."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(ch for ch in base if ch.isprintable()).strip()
    return (base or pgettext("toolcalling unnamed file", "attachment"))[-NAME_LENGTH:]


@receiver(post_delete, sender=Attachment, dispatch_uid="toolcalling_attachment_file")
def delete_file(sender: type[Attachment], instance: Attachment, using: str, **kwargs: Any) -> None:
    """However a row goes (its conversation, its user, the admin, a bulk delete), its file goes after the
    transaction commits; a rollback keeps both."""
    transaction.on_commit(partial(_delete_stored, instance.storage_name), using=using)


def _delete_stored(name: str) -> None:
    attachment_storage().delete(name)
