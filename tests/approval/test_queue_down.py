"""An unreachable Celery broker loses nothing: an approval is undone, a lost continuation is queued again."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.db import transaction
from django.utils import timezone

from tests.approval.test_decisions import counter, post
from tests.celery_app import app as celery_app
from tests.services import celery_conf, free_port
from toolcalling import approval
from toolcalling.approval._sweeps import continue_stalled
from toolcalling.models import Conversation, ToolCall


@contextmanager
def broker_down() -> Iterator[None]:
    """Tasks go to a broker nobody listens on (a free port), as when Redis is down."""
    with celery_conf(celery_app, task_always_eager=False, broker_url=f"redis://127.0.0.1:{free_port()}/0"):
        yield


@pytest.fixture
def waiting(api, ops, model) -> ToolCall:
    model.call("bump", {"name": "queued", "by": 1})
    response = post(api, ops, "bump it")
    return ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])


@pytest.mark.django_db(transaction=True)
def test_an_approval_the_broker_cannot_take_is_undone_and_can_be_given_again(approver, approver_api, waiting, model):
    url = f"/api/toolcalling/tool-calls/{waiting.pk}/approve/"
    with broker_down():
        response = approver_api.post(url)
    assert response.status_code == 503
    assert response.json()["code"] == "queue_unavailable"
    assert response.json()["detail"] == (
        "The task queue could not be reached, so the call was not started; it waits for approval again."
    )
    assert response.json()["status"] == "awaiting_approval"
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decided_by, waiting.decided_at) == ("awaiting_approval", None, None)
    assert counter("queued") == 0
    assert LogEntry.objects.filter(change_message="Approval undone: the task queue could not be reached.").exists()
    # With the broker back (tasks run eagerly here), approving again runs it once and the model answers.
    model.reply("Bumped.")
    assert approver_api.post(url).status_code == 200
    assert counter("queued") == 1
    assert Conversation.objects.get(pk=waiting.conversation_id).status == "idle"


@pytest.mark.django_db(transaction=True)
def test_a_continuation_the_broker_lost_is_queued_again_by_the_sweep(approver, approver_api, waiting, model):
    with broker_down():
        assert (
            approver_api.post(
                f"/api/toolcalling/tool-calls/{waiting.pk}/reject/", {"reason": "no"}, format="json"
            ).status_code
            == 200
        )
    conversation = Conversation.objects.get(pk=waiting.conversation_id)
    assert conversation.status == "awaiting_approval"  # decided, but nobody continued it
    assert continue_stalled() == []  # too recent: a continuation may still be on its way
    model.reply("Not bumping, then.")
    later = timezone.now() + timedelta(minutes=5)
    assert [c.pk for c in continue_stalled(now=later)] == [conversation.pk]
    conversation.refresh_from_db()
    assert conversation.status == "idle"
    assert conversation.messages.order_by("id").last().content == "Not bumping, then."
    assert ToolCall.objects.get(pk=waiting.pk).status == "rejected"


@pytest.mark.django_db(transaction=True)
def test_an_approval_in_the_sites_transaction_the_broker_cannot_take_waits_again_and_the_commit_goes_on(
    approver, waiting
):
    after = []
    with broker_down():
        with transaction.atomic():  # the site's own transaction (ATOMIC_REQUESTS, the admin's change form)
            approval.approve(waiting, approver)
            transaction.on_commit(lambda: after.append("the site's own callback"))
    # The failed queueing is logged, not raised at the commit: what the site queued after it still runs.
    assert after == ["the site's own callback"]
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decided_by, waiting.decided_at) == ("awaiting_approval", None, None)
    assert counter("queued") == 0
    assert LogEntry.objects.filter(change_message="Approval undone: the task queue could not be reached.").exists()
