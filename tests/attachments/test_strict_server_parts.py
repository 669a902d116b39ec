"""The strict servers' checks of file parts, request by request: a part must decode, and its bytes must be the
type it claims (an image part an image of a supported type, a file part a PDF)."""

import base64

import pytest

from tests.attachments import files
from toolcalling.testing.rules import validate_chat_request
from toolcalling.testing.rules_anthropic import validate_messages_request
from toolcalling.testing.rules_responses import validate_responses_request


def url(kind: str, data: bytes) -> str:
    return f"data:{kind};base64,{base64.b64encode(data).decode()}"


def chat(part: dict) -> list[str]:
    body = {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, part]}]}
    return validate_chat_request(body)


@pytest.mark.parametrize(
    "part,fragment",
    [
        ({"type": "image_url", "image_url": {"url": url("image/png", files.PNG)}}, None),
        ({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}, None),
        ({"type": "file", "file": {"filename": "a.pdf", "file_data": url("application/pdf", files.PDF)}}, None),
        ({"type": "image_url", "image_url": {"url": url("image/png", files.JPEG)}}, "unsupported image"),
        ({"type": "image_url", "image_url": {"url": url("image/svg+xml", files.SVG)}}, "unsupported image"),
        ({"type": "image_url", "image_url": {"url": "data:image/png;base64,%%%"}}, "could not be decoded"),
        (
            {"type": "file", "file": {"filename": "a.pdf", "file_data": url("application/pdf", files.EXECUTABLE)}},
            "Expected a PDF",
        ),
        ({"type": "file", "file": {"filename": "a.pdf"}}, "file.file_data"),
    ],
)
def test_chat_completions_parts(part, fragment):
    errors = chat(part)
    assert (errors == []) if fragment is None else any(fragment in e for e in errors), errors


def test_responses_parts():
    def body(part):
        return {"model": "gpt-4o", "input": [{"type": "message", "role": "user", "content": [part]}]}

    assert validate_responses_request(body({"type": "input_image", "image_url": url("image/gif", files.GIF)})) == []
    wrong = validate_responses_request(body({"type": "input_image", "image_url": url("image/gif", files.PNG)}))
    assert any("unsupported image" in e for e in wrong)
    pdf = {"type": "input_file", "filename": "a.pdf", "file_data": url("application/pdf", files.HTML)}
    assert any("Expected a PDF" in e for e in validate_responses_request(body(pdf)))


def test_anthropic_blocks():
    def body(block):
        return {"model": "claude-sonnet-4-5", "max_tokens": 100,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, block]}]}  # fmt: skip

    def source(kind, data):
        return {"type": "base64", "media_type": kind, "data": base64.b64encode(data).decode()}

    assert validate_messages_request(body({"type": "image", "source": source("image/webp", files.WEBP)})) == []
    mismatch = validate_messages_request(body({"type": "image", "source": source("image/png", files.JPEG)}))
    assert any("image/png media type, but the image appears to be a image/jpeg" in e for e in mismatch)
    document = validate_messages_request(body({"type": "document", "source": source("application/pdf", files.PNG)}))
    assert any("appears to be a image/png" in e for e in document)
