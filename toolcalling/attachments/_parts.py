"""Attachments as the model sees them: Chat Completions content parts with the bytes as base64 data URLs
(each model API turns them into its own parts), and an estimate of the tokens each costs for memory budgets.

A site's storage is private, so the provider gets the bytes, not a URL it could not fetch. What one request
carries is bounded (``request_files``): the newest files that fit ``MAX_PER_REQUEST`` and
``MAX_BYTES_PER_REQUEST``; each older one is a short text stub in its place, and its file is not read."""

from __future__ import annotations

import base64
from collections.abc import Container, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ._files import AttachedFile
from ._storing import attachment_settings, human_size

if TYPE_CHECKING:
    from ..models import Attachment

# Memory budgets count an image as what the providers charge for a large one (Anthropic scales images to about
# 1.15 megapixels, 1,600 tokens; OpenAI's high detail 1024x1024 is 765), and a PDF at that per page, for
# a page guessed every 50 KB of the file, as its bytes are not read to count pages.
IMAGE_TOKENS = 1600
PDF_PAGE_TOKENS = 1600
PDF_BYTES_PER_PAGE = 50 * 1024
FILE_PARTS = ("image_url", "file")
# Bytes read from storage at a time: a multiple of 3, so each chunk's base64 follows the last one's unpadded.
CHUNK_BYTES = 3 * 256 * 1024


def data_url(file: AttachedFile) -> str:
    """The file as a base64 data URL, read from storage a chunk at a time into a buffer of the URL's length:
    besides the URL itself, only that buffer is held while it is built, never the whole file's bytes."""
    prefix = f"data:{file.content_type};base64,".encode("ascii")
    encoded = bytearray(len(prefix) + 4 * -(-file.size // 3))  # the stored size; a different one still works
    encoded[: len(prefix)] = prefix
    end = len(prefix)
    rest = b""  # bytes of a short read, encoded with the next chunk so no padding lands mid-stream
    with file.open() as f:
        while chunk := f.read(CHUNK_BYTES):
            chunk = rest + chunk  # no copy while ``rest`` is empty, nor below for a whole chunk
            whole = len(chunk) - len(chunk) % 3
            piece = base64.b64encode(chunk[:whole])
            encoded[end : end + len(piece)] = piece
            end += len(piece)
            rest = chunk[whole:]
    piece = base64.b64encode(rest)
    encoded[end : end + len(piece)] = piece
    del encoded[end + len(piece) :]
    return encoded.decode("ascii")


def file_part(attachment: Attachment | AttachedFile) -> dict[str, Any]:
    """One attachment as a Chat Completions content part: ``image_url`` for an image, ``file`` for a PDF."""
    file = attachment if isinstance(attachment, AttachedFile) else AttachedFile.of(attachment)
    url = data_url(file)
    if file.content_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "file", "file": {"filename": file.name, "file_data": url}}


def stub_part(attachment: Attachment) -> dict[str, Any]:
    """What stands for a file a request does not carry: a text part naming it (every API takes text parts)."""
    text = (
        f"[File {attachment.name} ({attachment.content_type}, {human_size(attachment.size)}) was attached here; "
        "it is not sent again in this request.]"
    )
    return {"type": "text", "text": text}


def request_files(attachments: Sequence[Attachment]) -> set[Any]:
    """The ids of the files one request carries, of ``attachments`` (a history's files, oldest first, or at
    least all those newer than any given): the newest ones, up to ``MAX_PER_REQUEST`` files and
    ``MAX_BYTES_PER_REQUEST`` bytes. It stops at the first that does not fit, so what is sent is always the
    latest files, never an older small one in a gap. A message's own files always fit: ``sendable`` refuses
    more."""
    limits = attachment_settings()
    most, room = limits["MAX_PER_REQUEST"], limits["MAX_BYTES_PER_REQUEST"]
    sent: set[Any] = set()
    for attachment in reversed(attachments):
        if len(sent) == most or attachment.size > room:
            break
        sent.add(attachment.pk)
        room -= attachment.size
    return sent


def with_parts(
    text: str, attachments: Iterable[Attachment], *, sent: Container[Any] | None = None
) -> str | list[dict[str, Any]]:
    """A user message's content: its text alone, or its text and its attachments as parts; with ``sent`` (of
    ``request_files``) a file not in it is a stub, and its file is not read."""
    parts = [file_part(a) if sent is None or a.pk in sent else stub_part(a) for a in attachments]
    if not parts:
        return text
    return [{"type": "text", "text": text}, *parts] if text else parts


def part_tokens(part: Any) -> int:
    """The estimated tokens of a file part (0 for any other part)."""
    if not isinstance(part, dict) or part.get("type") not in FILE_PARTS:
        return 0
    if part["type"] == "image_url":
        return IMAGE_TOKENS
    encoded = (part.get("file") or {}).get("file_data") or ""
    size = len(encoded) * 3 // 4  # base64 holds 3 bytes in 4 characters
    return PDF_PAGE_TOKENS * max(1, -(-size // PDF_BYTES_PER_PAGE))


def is_file_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in FILE_PARTS
