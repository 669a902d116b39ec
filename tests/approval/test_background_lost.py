"""A background turn acknowledged with 202 whose job is lost (Redis restarted empty, the worker that took it killed,
or a worker that takes it only after the sweep took the quiet turn over): the user's message was stored before
the 202, so it is answered all the same, once. Found by the chaos run (bench/chaos.py)."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from rest_framework.test import APIClient

from tests.approval.commits import relaxed_writes
from toolcalling import approval, engine
from toolcalling.conf import toolcalling_settings
from toolcalling.models import Conversation, Message, UsageCounter


def post_in_background(api, conversation, content):
    """Post a background turn whose job goes to a queue no worker reads (Django Tasks' database backend)."""
    with override_settings(TOOLCALLING={**settings.TOOLCALLING, "TASKS": "django"}):
        response = api.post(f"/api/toolcalling/conversations/{conversation['id']}/messages/",
                            {"content": content, "background": True}, format="json")  # fmt: skip
    assert response.status_code == 202, response.content
    [job] = DBTaskResult.objects.all()
    return job


def history(conversation):
    return list(
        Message.objects.filter(conversation_id=conversation["id"]).order_by("id").values_list("role", "content")
    )


@pytest.mark.django_db(transaction=True)
def test_a_background_turn_whose_job_was_lost_is_answered_by_the_sweep(
    api, ops, model, django_capture_on_commit_callbacks
):
    job = post_in_background(api, ops, "what is on today?")
    job.delete()  # the queue loses it: nobody will ever run it
    assert history(ops) == [("user", "what is on today?")]  # stored with the claim, before the 202

    Conversation.objects.filter(pk=ops["id"]).update(
        updated_at=timezone.now() - timedelta(seconds=toolcalling_settings.STALE_TURN_TIMEOUT + 1)
    )
    model.reply("Nothing is on today.")
    with django_capture_on_commit_callbacks(execute=True):
        assert [str(c.pk) for c in approval.sweep().resumed] == [ops["id"]]
    assert history(ops) == [("user", "what is on today?"), ("assistant", "Nothing is on today.")]
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    model.assert_done()


@pytest.mark.parametrize("limited", [False, True], ids=["no limits", "a turn limit"])
@pytest.mark.django_db(transaction=True)
def test_a_background_job_run_later_answers_the_stored_message_once_and_counts_its_turn(
    api, ops, model, alice, limited
):
    limits = [{"turns": 5, "per": "user", "period": "day"}] if limited else []
    with override_settings(TOOLCALLING={**settings.TOOLCALLING, "USAGE_LIMITS": limits}):
        job = post_in_background(api, ops, "hello")
        model.reply("Hello to you.")
        engine.run_claimed_turn(*job.args_kwargs["args"])  # what the worker runs once it takes the job
    assert history(ops) == [("user", "hello"), ("assistant", "Hello to you.")]
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    rows = UsageCounter.objects.filter(scope="user", key=str(alice.pk), period="day")
    assert list(rows.values_list("turns", flat=True)) == [1]
    model.assert_done()


@pytest.mark.django_db(transaction=True)  # real transactions: their BEGIN and COMMIT are what is counted
def test_a_message_acknowledged_before_its_turn_ran_is_on_disk_first(alice, ops, model):
    """A background turn's 202 and a streamed turn's 200 come before any later write of the turn: were the
    claim's commit to skip the wait, a crash of PostgreSQL just after it would lose an acknowledged message.
    A JSON turn's claim may skip it: its answer comes after the turn's end, which waits (other databases send
    nothing). The requests run in this thread (Django's test client, not the ASGI one of the approval group),
    whose connection's statements are what is counted."""
    api = APIClient()
    api.force_authenticate(alice)
    postgresql = connection.vendor == "postgresql"
    with CaptureQueriesContext(connection) as queries:
        post_in_background(api, ops, "later").delete()
    assert relaxed_writes(queries, "INSERT", "toolcalling_message") == [False]
    Conversation.objects.filter(pk=ops["id"]).update(status="idle", turn_token=None)

    url = f"/api/toolcalling/conversations/{ops['id']}/messages/"
    model.reply("Streamed.")
    with CaptureQueriesContext(connection) as queries:
        streamed = api.post(url, {"content": "stream it"}, format="json", HTTP_ACCEPT="text/event-stream")
    assert streamed.status_code == 200
    assert b"turn_end" in b"".join(streamed.streaming_content)
    assert relaxed_writes(queries, "INSERT", "toolcalling_message")[:1] == [
        False
    ]  # the claim's, in the request (the turn's in its thread)

    model.reply("Answered.")
    with CaptureQueriesContext(connection) as queries:
        assert api.post(url, {"content": "answer it"}, format="json").status_code == 201
    assert relaxed_writes(queries, "INSERT", "toolcalling_message")[:1] == [postgresql]
    model.assert_done()
