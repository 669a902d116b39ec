"""Attachments as the model sees them: Chat Completions content parts with the bytes as base64 data URLs
(each model API turns them into its own parts), and an estimate of the tokens each costs for memory budgets.

A site's storage is private, so the provider gets the bytes, not a URL it could not fetch."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._files import AttachedFile

if TYPE_CHECKING:
    from ..models import Attachment

# Memory budgets count an image as what the providers charge for a large one (Anthropic scales images to about
# 1.15 megapixels, 1,600 tokens; OpenAI's high detail 1024x1024 is 765), and a PDF at that per page, for
# a page guessed every 50 KB of the file, as its bytes are not read to count pages.
IMAGE_TOKENS = 1600
PDF_PAGE_TOKENS = 1600
PDF_BYTES_PER_PAGE = 50 * 1024
FILE_PARTS = ("image_url", "file")


def data_url(content_type: str, data: bytes) -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode('ascii')}"


def file_part(attachment: Attachment | AttachedFile) -> dict[str, Any]:
    """One attachment as a Chat Completions content part: ``image_url`` for an image, ``file`` for a PDF."""
    file = attachment if isinstance(attachment, AttachedFile) else AttachedFile.of(attachment)
    with file.open() as f:
        url = data_url(file.content_type, f.read())
    if file.content_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "file", "file": {"filename": file.name, "file_data": url}}


def with_parts(text: str, attachments: Iterable[Attachment]) -> str | list[dict[str, Any]]:
    """A user message's content: its text alone, or its text and its attachments as parts."""
    parts = [file_part(a) for a in attachments]
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
