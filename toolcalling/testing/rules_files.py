"""The strict servers' checks of image and file parts: the data decodes, and its bytes are the type it claims.

The real APIs refuse an image whose bytes are not an image, and (Anthropic) one whose bytes are another type
than its ``media_type``; a file part must be a PDF. The magic numbers are written again here, as the test
doubles import nothing of the app."""

from __future__ import annotations

import base64
import binascii

IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
DOCUMENT_TYPES = ("application/pdf",)


def bytes_type(data: bytes) -> str | None:
    """The type the bytes are, of the types these APIs take."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"%PDF-"):
        return "application/pdf"
    return None


def decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def split_data_url(url: str) -> tuple[str, str] | None:
    """``(media type, base64 data)`` of a base64 data URL, or None for any other URL."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    media_type, data = url[5:].split(";base64,", 1)
    return media_type, data


def image_url_errors(path: str, url: str) -> list[str]:
    """An OpenAI image part's URL: an http(s) URL passes (nothing is fetched here); a data URL must decode to
    an image of a supported type, the type it names."""
    if url.startswith(("http://", "https://")):
        return []
    parts = split_data_url(url)
    if parts is None:
        return [f"Invalid '{path}': expected a URL or a base64-encoded data URL, but got a value that is neither."]
    media_type, data = parts
    raw = decoded(data)
    if raw is None:
        return [f"Invalid '{path}': the base64 data of the image could not be decoded."]
    found = bytes_type(raw)
    if found not in IMAGE_TYPES or found != media_type:
        return [
            "You uploaded an unsupported image. Please make sure your image has of one the following formats: "
            f"{', '.join(repr(t) for t in IMAGE_TYPES)} (at '{path}': it claims {media_type!r}, its bytes are "
            f"{found or 'none of them'})."
        ]
    return []


def file_data_errors(path: str, file_data: object) -> list[str]:
    """An OpenAI file part's ``file_data``: a base64 data URL of a PDF."""
    if not isinstance(file_data, str):
        return [f"Missing required parameter: '{path}'."]
    parts = split_data_url(file_data)
    raw = decoded(parts[1]) if parts is not None else None
    if parts is None or raw is None:
        return [f"Invalid '{path}': expected a base64-encoded data URL of the file."]
    if parts[0] not in DOCUMENT_TYPES or bytes_type(raw) != parts[0]:
        return [f"Invalid file data: '{path}'. Expected a PDF file, its bytes are {bytes_type(raw) or 'not one'}."]
    return []


def source_errors(path: str, source: object, kinds: tuple[str, ...]) -> list[str]:
    """An Anthropic image or document block's base64 ``source``: decodable, its bytes the ``media_type``."""
    if not isinstance(source, dict):
        return [f"{path}.source: Field required"]
    if source.get("type") != "base64":
        return []  # url sources are fetched by the API; nothing to check here
    media_type, data = source.get("media_type"), source.get("data")
    if media_type not in kinds:
        return [f"{path}.source.base64.media_type: Input should be {' or '.join(repr(k) for k in kinds)}"]
    raw = decoded(data) if isinstance(data, str) else None
    if raw is None:
        return [f"{path}.source.base64.data: The data could not be decoded as base64."]
    found = bytes_type(raw)
    if found != media_type:
        what = "image" if media_type.startswith("image/") else "file"
        return [f"{path}.source.base64: The {what} was specified using the {media_type} media type, but the "
                f"{what} appears to be a {found or 'unknown'} {what}"]  # fmt: skip
    return []
