"""Deleting a conversation, however it is deleted, deletes its files from storage once the deletion commits;
uploads no message took are swept by the expiry command. Real commits (transaction=True), on every database."""

import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from django.utils import timezone

from tests.attachments import files
from tests.attachments.conftest import URL, stored_files, upload
from toolcalling.admin import ConversationAdmin, MessageAdmin, ToolCallAdmin
from toolcalling.models import Attachment, Conversation

pytestmark = pytest.mark.django_db(transaction=True)


def conversation_with_files(api, model, count: int = 2) -> str:
    conversation = api.post(URL + "conversations/", {"assistant": "helper"}, format="json").json()
    ids = [upload(api, files.PNG if n % 2 == 0 else files.PDF).json()["id"] for n in range(count)]
    model.reply("seen")
    url = URL + f"conversations/{conversation['id']}/messages/"
    assert api.post(url, {"content": "see", "attachments": ids}, format="json").status_code == 201
    return conversation["id"]


def test_deleting_through_the_api_removes_the_files(api, model):
    pk = conversation_with_files(api, model)
    other = upload(api, files.GIF).json()  # not sent: not the conversation's, stays
    assert len(stored_files()) == 3
    assert api.delete(URL + f"conversations/{pk}/").status_code == 204
    assert [p.suffix for p in stored_files()] == [".gif"]
    assert [str(pk) for pk in Attachment.objects.values_list("pk", flat=True)] == [other["id"]]


def test_a_rolled_back_deletion_keeps_the_files(api, model):
    pk = conversation_with_files(api, model)
    with pytest.raises(RuntimeError), transaction.atomic():
        Conversation.objects.filter(pk=pk).delete()
        assert len(stored_files()) == 2  # not before the commit
        raise RuntimeError("rolled back")
    assert len(stored_files()) == 2 and Attachment.objects.count() == 2


def test_bulk_deletion_in_the_admin_removes_the_files(api, model, monkeypatch):
    """The admin keeps conversations as the audit trail; a site that lets staff delete them (this override)
    gets their files deleted too."""
    for admin_class in (ConversationAdmin, MessageAdmin, ToolCallAdmin):  # its rows go with it
        monkeypatch.setattr(admin_class, "has_delete_permission", lambda self, request, obj=None: True)
    pk = conversation_with_files(api, model)
    admin = get_user_model().objects.create_superuser("root", password="pw")
    client = Client()
    client.force_login(admin)
    response = client.post("/admin/toolcalling/conversation/",
                           {"action": "delete_selected", "_selected_action": [pk], "post": "yes"})  # fmt: skip
    assert response.status_code == 302, response.content
    assert not Conversation.objects.exists() and stored_files() == []


def test_a_bulk_queryset_delete_removes_the_files(api, model, alice):
    conversation_with_files(api, model)
    conversation_with_files(api, model)
    assert len(stored_files()) == 4
    Conversation.objects.filter(user=alice).delete()
    assert stored_files() == []


def test_deleting_the_user_removes_their_files(api, model, alice):
    conversation_with_files(api, model)
    upload(api, files.PNG)
    assert len(stored_files()) == 3
    alice.delete()
    assert stored_files() == [] and not Attachment.objects.exists()


@pytest.mark.toolcalling(ATTACHMENTS={"UNATTACHED_MAX_AGE": 3600})
def test_the_expiry_command_sweeps_old_unsent_uploads_only(api, model):
    conversation_with_files(api, model, count=1)
    old = upload(api, files.JPEG).json()
    fresh = upload(api, files.GIF).json()
    Attachment.objects.filter(pk=old["id"]).update(created_at=timezone.now() - timedelta(hours=2))
    Attachment.objects.filter(message__isnull=False).update(created_at=timezone.now() - timedelta(days=30))
    out = io.StringIO()
    call_command("toolcalling_expire", stdout=out)
    assert "deleted 1 unsent attachments" in out.getvalue()
    left = {str(a.pk) for a in Attachment.objects.all()}
    assert old["id"] not in left and fresh["id"] in left and len(left) == 2
    assert sorted(p.suffix for p in stored_files()) == [".gif", ".png"]
