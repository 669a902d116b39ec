"""Attachments as the model sees them: the bytes as base64 data URLs (storage makes them a user message's
parts, each model API its own), and what a file is taken to cost in tokens for memory budgets.

A site's storage is private, so the provider gets the bytes, not a URL it could not fetch. What one request
carries is bounded (``request_files``): the newest files that fit ``MAX_PER_REQUEST`` and
``MAX_BYTES_PER_REQUEST``; each older one is a short text stub in its place, and its file is not read."""

from __future__ import annotations

import base64
from collections.abc import Sequence
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


def stub_text(attachment: Attachment) -> str:
    """What stands for a file a request does not carry: text naming it (every API takes text)."""
    return (
        f"[File {attachment.name} ({attachment.content_type}, {human_size(attachment.size)}) was attached here; "
        "it is not sent again in this request.]"
    )


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


def document_tokens(encoded_size: int) -> int:
    """The estimated tokens of a PDF whose base64 is ``encoded_size`` characters long: a page per 50 KB."""
    size = encoded_size * 3 // 4  # base64 holds 3 bytes in 4 characters
    return PDF_PAGE_TOKENS * max(1, -(-size // PDF_BYTES_PER_PAGE))
