"""POST attachments/: the bytes decide what is allowed, the size is refused while read, and nothing refused
reaches storage."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models.sql.compiler import SQLCompiler
from django.test import Client

from tests.attachments import files
from tests.attachments.conftest import URL, stored_files, upload
from toolcalling.attachments import carried
from toolcalling.models import Attachment


@pytest.mark.parametrize(
    "data,kind",
    [
        (files.PNG, "image/png"),
        (files.JPEG, "image/jpeg"),
        (files.GIF, "image/gif"),
        (files.WEBP, "image/webp"),
        (files.PDF, "application/pdf"),
    ],
)
def test_each_allowed_type_is_stored_by_what_its_bytes_are(api, alice, data, kind):
    # The declared type and the name lie; the stored type is the bytes' own.
    response = upload(api, data, name="../../etc/passwd.txt", content_type="text/plain")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["content_type"] == kind and body["size"] == len(data) and body["name"] == "passwd.txt"
    attachment = Attachment.objects.get(pk=body["id"])
    assert attachment.user == alice and attachment.message is None
    assert body["url"] == f"{URL}attachments/{attachment.pk}/content/"
    (path,) = stored_files()
    assert path.read_bytes() == data
    # The generated name: nothing of the user's file name is in the path.
    assert "passwd" not in attachment.storage_name and ".." not in attachment.storage_name


@pytest.mark.parametrize(
    "data,name,declared",
    [
        (files.EXECUTABLE, "invoice.pdf", "application/pdf"),
        (files.EXECUTABLE, "screenshot.png", "image/png"),
        (files.SVG, "logo.svg", "image/svg+xml"),
        (files.SVG, "logo.png", "image/png"),
        (files.HTML, "page.html", "text/html"),
        (files.HTML, "photo.jpg", "image/jpeg"),
        (b"", "empty.png", "image/png"),
        (b"\x89PNG", "short.png", "image/png"),
    ],
)
def test_disguised_and_unsupported_files_are_refused_with_nothing_stored(api, data, name, declared):
    response = upload(api, data, name=name, content_type=declared)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "unsupported_attachment"
    assert stored_files() == [] and not Attachment.objects.exists()


@pytest.mark.toolcalling(ATTACHMENTS={"TYPES": ["application/pdf"]})
def test_types_the_site_leaves_out_are_refused(api, model):
    assert upload(api, files.PNG).json()["code"] == "unsupported_attachment"
    assert upload(api, files.PDF, name="a.pdf").status_code == 201


@pytest.mark.toolcalling(ATTACHMENTS={"MAX_BYTES": 200 * 1024})
def test_a_file_over_the_limit_is_a_413_before_it_reaches_storage(api, model):
    big = files.PNG + b"\x00" * (300 * 1024)
    response = upload(api, big)
    assert response.status_code == 413, response.content
    body = response.json()
    assert body["code"] == "attachment_too_large" and "200 KiB" in body["detail"]
    assert stored_files() == [] and not Attachment.objects.exists()
    # Exactly at the limit is fine.
    assert upload(api, files.PNG + b"\x00" * (200 * 1024 - len(files.PNG))).status_code == 201


@pytest.mark.parametrize("data,status", [(files.SVG, 400), (files.PNG, 201)])
def test_a_session_user_with_a_csrf_token_gets_the_same_checks(alice, data, status):
    """DRF's CSRF check reads a session user's form before the view does: the app's upload handler reads it."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    token = "k" * 32
    client.cookies["csrftoken"] = token
    sent = {"file": SimpleUploadedFile("x.png", data, "image/png")}
    response = client.post(URL + "attachments/", sent, headers={"X-CSRFToken": token})
    assert response.status_code == status, response.content
    assert len(stored_files()) == (status == 201)


def test_an_upload_needs_a_file_and_a_user(api, db):
    response = api.post(URL + "attachments/", {}, format="multipart")
    assert response.status_code == 400 and "file" in response.json()
    from rest_framework.test import APIClient

    assert upload(APIClient(), files.PNG).status_code in (401, 403)
    assert stored_files() == []


def test_a_message_that_names_no_upload_builds_no_query_for_one(alice, monkeypatch):
    """Most messages carry no file: what they carry is known without building, or compiling, a query."""
    compiled: list[str] = []
    real = SQLCompiler.as_sql

    def counting(self, *args, **kwargs):
        compiled.append(self.query.model.__name__)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", counting)
    assert carried(alice, [], []) == []
    assert compiled == []
