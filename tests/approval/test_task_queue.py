"""Queueing a job as a Django Task (``TOOLCALLING["TASKS"] = "django"``): a backend that cannot be reached loses
nothing, as an unreachable Celery broker does not, and a job asked for inside a transaction is queued when it
commits, never when it rolls back."""

from collections.abc import Iterator

import pytest
from django.conf import settings
from django.db import transaction
from django.test import override_settings
from django_tasks_db.models import DBTaskResult

from tests.approval.test_decisions import counter, post
from toolcalling import engine
from toolcalling.models import Conversation, Message, ToolCall

UNREACHABLE = {"default": {"BACKEND": "tests.task_backends.UnreachableBackend"}}


@pytest.fixture
def django_tasks() -> Iterator[None]:
    with override_settings(TOOLCALLING={**settings.TOOLCALLING, "TASKS": "django"}):
        yield


@pytest.fixture
def waiting(api, ops, model) -> ToolCall:
    model.call("bump", {"name": "queued", "by": 1})
    response = post(api, ops, "bump it")
    return ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])


@pytest.mark.django_db(transaction=True)
def test_an_approval_the_task_backend_cannot_take_is_undone(approver_api, waiting, model, django_tasks):
    with override_settings(TASKS=UNREACHABLE):
        response = approver_api.post(f"/api/toolcalling/tool-calls/{waiting.pk}/approve/")
    assert response.status_code == 503, response.content
    assert response.json()["code"] == "queue_unavailable"
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decided_by) == ("awaiting_approval", None)
    assert counter("queued") == 0
    assert not DBTaskResult.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_background_turn_the_task_backend_cannot_take_releases_the_conversation(api, ops, model, django_tasks):
    url = f"/api/toolcalling/conversations/{ops['id']}/messages/"
    with override_settings(TASKS=UNREACHABLE):
        response = api.post(url, {"content": "hi", "background": True}, format="json")
    assert response.status_code == 503 and response.json()["code"] == "queue_unavailable"
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    assert not Message.objects.filter(conversation_id=ops["id"]).exists()


@pytest.mark.django_db(transaction=True)
def test_a_job_asked_for_inside_a_transaction_is_queued_when_it_commits_and_never_when_it_rolls_back(
    alice, django_tasks
):
    conversation = Conversation.objects.create(user=alice, assistant_id="ops")
    with transaction.atomic():
        engine.enqueue(engine.CONTINUE_CONVERSATION, str(conversation.pk))
        assert not DBTaskResult.objects.exists()  # a worker would look for rows it cannot see yet
    [queued] = DBTaskResult.objects.all()
    assert queued.task_path == "toolcalling.django_tasks.continue_conversation"
    assert queued.args_kwargs == {"args": [str(conversation.pk)], "kwargs": {}}

    with pytest.raises(RuntimeError), transaction.atomic():
        engine.enqueue(engine.CONTINUE_CONVERSATION, str(conversation.pk))
        raise RuntimeError("the decision failed")
    assert DBTaskResult.objects.count() == 1
