"""What one user may upload: a rate (the DRF throttle scope ``toolcalling_upload``), and a cap on the uploads no
message has taken yet (``ATTACHMENTS["MAX_UNSENT"]`` files, ``["MAX_UNSENT_BYTES"]`` bytes). Refusals are the app's
error shape, and nothing refused stays in storage."""

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from tests.attachments import files
from tests.attachments.conftest import URL, stored_files, upload
from toolcalling.models import Attachment

DEFAULT_RATE = 30  # per minute


def rates(**scopes):
    return override_settings(REST_FRAMEWORK={"DEFAULT_THROTTLE_RATES": scopes})


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_uploads_are_throttled_per_user_with_the_apps_error(api, bob, fresh_cache):
    with rates(toolcalling_upload="3/minute"):
        for _ in range(3):
            assert upload(api, files.PNG).status_code == 201
        refused = upload(api, files.PNG)
        assert refused.status_code == 429, refused.content
        body = refused.json()
        assert body["code"] == "throttled" and body["status"] is None and body["detail"], body
        assert 0 < int(refused["Retry-After"]) <= 60
        assert Attachment.objects.count() == 3 and len(stored_files()) == 3
        # Another user has a rate of their own.
        assert upload(client_of(bob), files.PNG).status_code == 201


@pytest.mark.toolcalling(ATTACHMENTS={"MAX_UNSENT": 100})  # the throttle refuses first
def test_the_upload_throttle_is_on_by_default_and_a_site_may_switch_it_off(api, model, fresh_cache):
    with rates(toolcalling_turn=None):  # the site names other scopes, not this one
        statuses = [upload(api, files.GIF).status_code for _ in range(DEFAULT_RATE + 1)]
        assert statuses == [201] * DEFAULT_RATE + [429]
    with rates(toolcalling_upload=None):
        assert upload(api, files.GIF).status_code == 201


@pytest.mark.toolcalling(ATTACHMENTS={"MAX_PER_MESSAGE": 2, "MAX_UNSENT": 2})
@pytest.mark.database  # the unsent uploads counted by the database
def test_a_user_may_keep_only_so_many_unsent_uploads(api, model, bob, conversation):
    first, second = upload(api, files.PNG).json(), upload(api, files.GIF).json()
    refused = upload(api, files.PDF, name="third.pdf")
    assert refused.status_code == 413, refused.content
    body = refused.json()
    assert body["code"] == "upload_quota_exceeded" and body["status"] is None
    assert "2 files" in body["detail"], body
    assert Attachment.objects.count() == 2 and len(stored_files()) == 2
    assert upload(client_of(bob), files.PNG).status_code == 201  # a cap per user
    # Sending them frees the room.
    model.reply("Seen.")
    sent = api.post(URL + f"conversations/{conversation['id']}/messages/",
                    {"content": "Look", "attachments": [first["id"], second["id"]]}, format="json")  # fmt: skip
    assert sent.status_code == 201, sent.content
    assert upload(api, files.PDF).status_code == 201
    model.assert_done()


@pytest.mark.toolcalling(ATTACHMENTS={"MAX_BYTES": len(files.PDF), "MAX_UNSENT_BYTES": len(files.PDF) + len(files.PNG)})
@pytest.mark.database  # their bytes added up by the database
def test_a_user_may_keep_only_so_many_bytes_of_unsent_uploads(api, model):
    assert upload(api, files.PDF, name="a.pdf").status_code == 201
    assert upload(api, files.PNG).status_code == 201
    refused = upload(api, files.GIF)  # 43 bytes more than the cap allows
    assert refused.status_code == 413, refused.content
    body = refused.json()
    assert body["code"] == "upload_quota_exceeded" and body["status"] is None
    assert "261 B" in body["detail"], body
    assert sorted(Attachment.objects.values_list("content_type", flat=True)) == ["application/pdf", "image/png"]
    assert len(stored_files()) == 2  # the refused file did not stay in storage
