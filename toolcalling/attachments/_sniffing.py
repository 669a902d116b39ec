"""What a file is, read from its first bytes (magic numbers), never from its name or its declared type."""

from __future__ import annotations

# Enough of the head to tell every supported type apart (WebP's "WEBP" ends at byte 12).
HEAD_BYTES = 16

# The file name suffix of each type's generated storage name.
SUFFIXES = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "application/pdf": ".pdf",
}


def sniff(head: bytes) -> str | None:
    """The content type the bytes ``head`` begin, or None for anything else (SVG, HTML, executables, text...).

    Each signature must sit at offset 0: a PDF reader accepts a header further in, which is how polyglot
    files (an HTML page that is also a PDF) are made, so such files are refused."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    return None
