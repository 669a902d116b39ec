"""Nobody reads or sends another user's file: a 404 to download, a 400 to send, and nothing stored."""

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from tests.attachments import files
from tests.attachments.conftest import URL, stored_files, upload
from toolcalling.models import Attachment, Message


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_owner_reads_an_image_inline_and_a_pdf_as_a_download(api):
    image = upload(api, files.PNG, name="shot.png").json()
    document = upload(api, files.PDF, name="invoice.pdf").json()
    shown = api.get(image["url"])
    assert shown.status_code == 200 and b"".join(shown.streaming_content) == files.PNG
    assert shown["Content-Type"] == "image/png" and shown["X-Content-Type-Options"] == "nosniff"
    assert shown["Content-Disposition"].startswith("inline") and "shot.png" in shown["Content-Disposition"]
    downloaded = api.get(document["url"])
    assert downloaded["Content-Type"] == "application/pdf" and downloaded["X-Content-Type-Options"] == "nosniff"
    assert (
        downloaded["Content-Disposition"].startswith("attachment")
        and "invoice.pdf" in downloaded["Content-Disposition"]
    )
    assert "sandbox" in downloaded["Content-Security-Policy"]


def test_another_user_gets_a_404_and_so_does_an_anonymous_one(api, bob):
    image = upload(api, files.PNG).json()
    assert client_of(bob).get(image["url"]).status_code == 404
    assert APIClient().get(image["url"]).status_code == 404


def test_staff_read_a_sent_file_only_with_the_right_to_view_conversations(api, model, conversation, bob):
    image = upload(api, files.PNG).json()
    model.reply("ok")
    sent = api.post(URL + f"conversations/{conversation['id']}/messages/",
                    {"content": "see", "attachments": [image["id"]]}, format="json")  # fmt: skip
    assert sent.status_code == 201, sent.content
    bob.is_staff = True
    bob.save()
    assert client_of(bob).get(image["url"]).status_code == 404  # staff, but may not view conversations
    bob.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    bob = type(bob).objects.get(pk=bob.pk)  # permissions are cached on the instance
    assert client_of(bob).get(image["url"]).status_code == 200
    bob.is_staff = False
    bob.save()
    assert client_of(type(bob).objects.get(pk=bob.pk)).get(image["url"]).status_code == 404


def test_sending_another_users_upload_is_refused_and_nothing_is_stored(api, model, conversation, bob):
    theirs = upload(client_of(bob), files.PNG).json()
    mine = upload(api, files.JPEG).json()
    before = Message.objects.count()
    response = api.post(URL + f"conversations/{conversation['id']}/messages/",
                        {"content": "look", "attachments": [mine["id"], theirs["id"]]}, format="json")  # fmt: skip
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "unknown_attachment"
    assert Message.objects.count() == before and model.requests == []
    assert Attachment.objects.filter(message__isnull=False).count() == 0
    # Bob's file is still his, unsent; and a multipart message with files is refused the same way, storing none.
    stored = len(stored_files())
    body = {"content": "look", "attachments": [theirs["id"]], "files": [SimpleUploadedFile("a.png", files.PNG)]}
    response = api.post(URL + f"conversations/{conversation['id']}/messages/", body, format="multipart")
    assert response.status_code == 400 and len(stored_files()) == stored


def test_an_upload_is_sent_once(api, model, conversation):
    image = upload(api, files.PNG).json()
    model.reply("ok")
    url = URL + f"conversations/{conversation['id']}/messages/"
    assert api.post(url, {"content": "a", "attachments": [image["id"]]}, format="json").status_code == 201
    again = api.post(url, {"content": "b", "attachments": [image["id"]]}, format="json")
    assert again.status_code == 400 and again.json()["code"] == "unknown_attachment"


def test_a_multipart_message_brings_its_own_files(api, model, conversation):
    model.reply("Two files.")
    url = URL + f"conversations/{conversation['id']}/messages/"
    sent = {"content": "here", "files": [SimpleUploadedFile("a.png", files.PNG, "image/png"),
                                         SimpleUploadedFile("b.pdf", files.PDF, "application/pdf")]}  # fmt: skip
    response = api.post(url, sent, format="multipart")
    assert response.status_code == 201, response.content
    names = [(a["name"], a["content_type"]) for a in response.json()["messages"][0]["attachments"]]
    assert names == [("a.png", "image/png"), ("b.pdf", "application/pdf")]
    assert len(stored_files()) == 2
    model.assert_done()


@pytest.mark.toolcalling(ATTACHMENTS={"MAX_PER_MESSAGE": 2})
def test_a_message_carries_at_most_max_per_message(api, model, conversation):
    ids = [upload(api, files.PNG).json()["id"] for _ in range(3)]
    url = URL + f"conversations/{conversation['id']}/messages/"
    response = api.post(url, {"content": "many", "attachments": ids}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "too_many_attachments"
    assert model.requests == []


def test_a_disguised_file_in_a_message_is_refused_before_anything_is_stored(api, model, conversation):
    url = URL + f"conversations/{conversation['id']}/messages/"
    sent = {"content": "here", "files": [SimpleUploadedFile("a.png", files.PNG, "image/png"),
                                         SimpleUploadedFile("b.pdf", files.EXECUTABLE, "application/pdf")]}  # fmt: skip
    response = api.post(url, sent, format="multipart")
    assert response.status_code == 400 and response.json()["code"] == "unsupported_attachment"
    assert stored_files() == [] and not Message.objects.exists() and model.requests == []


@pytest.mark.parametrize("ids", [["not-an-id"], [""], [{"id": 1}], [7]])
def test_a_wrong_id_is_one_flat_error(api, conversation, ids):
    url = URL + f"conversations/{conversation['id']}/messages/"
    response = api.post(url, {"content": "x", "attachments": ids}, format="json")
    assert response.status_code == 400
    assert response.json() == {"attachments": ["Each attachment must be the id of an upload."]}
