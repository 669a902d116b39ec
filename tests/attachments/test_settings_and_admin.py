"""ATTACHMENTS settings are checked (keys, numbers, types, a STORAGE alias that exists), and the admin's
conversation page shows a conversation's files, images as thumbnails that load for staff."""

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, override_settings

from tests.attachments import files
from tests.attachments.conftest import URL, upload
from toolcalling.checks import check_attachment_storage
from toolcalling.conf import ToolcallingSettings, toolcalling_settings


@pytest.mark.parametrize(
    "value,fragment",
    [
        ({"MAX_SIZE": 10}, "Unknown TOOLCALLING['ATTACHMENTS'] key(s): MAX_SIZE"),
        ({"MAX_BYTES": 0}, "'MAX_BYTES'] must be a positive integer"),
        ({"MAX_PER_MESSAGE": "5"}, "'MAX_PER_MESSAGE'] must be a positive integer"),
        ({"MAX_UNSENT_BYTES": -1}, "'MAX_UNSENT_BYTES'] must be a positive integer"),
        ({"MAX_PER_MESSAGE": 11}, "'MAX_PER_REQUEST'] (10) must be at least 'MAX_PER_MESSAGE' (11)"),
        ({"MAX_PER_MESSAGE": 3, "MAX_UNSENT": 2}, "'MAX_UNSENT'] (2) must be at least 'MAX_PER_MESSAGE' (3)"),
        ({"MAX_BYTES": 30 << 20}, "'MAX_BYTES_PER_REQUEST'] (20971520) must be at least 'MAX_BYTES' (31457280)"),
        ({"MAX_UNSENT_BYTES": 1 << 20}, "'MAX_UNSENT_BYTES'] (1048576) must be at least 'MAX_BYTES' (20971520)"),
        ({"TYPES": ["image/svg+xml"]}, "'TYPES'] must list types out of"),
        ({"STORAGE": None}, "must be the name of a STORAGES alias"),
        ("yes", "must be a dict"),
    ],
)
def test_attachment_settings_that_cannot_work_are_refused(value, fragment):
    with pytest.raises(ImproperlyConfigured) as refused:
        ToolcallingSettings.validate({"ATTACHMENTS": value})
    assert fragment in str(refused.value)


def test_a_sites_dict_is_merged_over_the_defaults():
    with override_settings(TOOLCALLING={"ATTACHMENTS": {"MAX_PER_MESSAGE": 2}}):
        assert toolcalling_settings.ATTACHMENTS["MAX_PER_MESSAGE"] == 2
        assert toolcalling_settings.ATTACHMENTS["STORAGE"] == "default"


def test_a_storage_alias_that_does_not_exist_is_error_e009():
    with override_settings(TOOLCALLING={"ATTACHMENTS": {"STORAGE": "uploads"}}):
        (error,) = check_attachment_storage()
    assert error.id == "toolcalling.E009" and "'uploads'" in error.msg
    storages = {"default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
                "uploads": {"BACKEND": "django.core.files.storage.InMemoryStorage"}}  # fmt: skip
    with override_settings(TOOLCALLING={"ATTACHMENTS": {"STORAGE": "uploads"}}, STORAGES=storages):
        assert check_attachment_storage() == []


def test_the_conversation_page_in_the_admin_shows_thumbnails_that_load(api, model, conversation):
    image = upload(api, files.PNG, name="screen.png").json()
    document = upload(api, files.PDF, name="invoice.pdf").json()
    model.reply("seen")
    url = URL + f"conversations/{conversation['id']}/messages/"
    assert (
        api.post(url, {"content": "see", "attachments": [image["id"], document["id"]]}, format="json").status_code
        == 201
    )
    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("root", password="pw"))
    page = staff.get(f"/admin/toolcalling/conversation/{conversation['id']}/change/").content.decode()
    assert f"<img src='{image['url']}' alt='screen.png'" in page
    assert f"<a href='{document['url']}'>Download</a>" in page
    assert staff.get(image["url"]).status_code == 200  # the thumbnail loads for staff who may view it
