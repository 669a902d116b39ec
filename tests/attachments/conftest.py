"""Uploading through the API, and looking into the attachments' storage."""

from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from . import assistants  # noqa: F401  (registers the assistants)

URL = "/api/toolcalling/"


def stored_files() -> list[Path]:
    """Every file in the attachments' storage (the test site's MEDIA_ROOT)."""
    root = Path(settings.MEDIA_ROOT) / "toolcalling" / "attachments"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def upload(client, data: bytes, name: str = "file.png", content_type: str = "image/png"):
    return client.post(URL + "attachments/", {"file": SimpleUploadedFile(name, data, content_type)}, format="multipart")


@pytest.fixture(autouse=True)
def storage_starts_empty():
    """Each test sees only the files it stored: what earlier tests left is removed first."""
    for path in stored_files():
        path.unlink()
    yield
