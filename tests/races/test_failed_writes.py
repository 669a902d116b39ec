"""Whatever a turn's write raises, the turn ends ``failed`` with an error of its own, never ``running``: in every
mode, without repeating the write that failed, so Stop finds no turn to stop and the next message works."""

from collections.abc import Iterator

import pytest
from django.db import connection, connections
from django.db.models.signals import post_save
from django.test import override_settings

from tests.integrity.test_routers import WRITES, AppWritesElsewhere
from toolcalling.models import Conversation, Message, UsageCounter
from toolcalling.testutils import override_model
from toolcalling.usage import window

from .conftest import PER_CALL, Answers, client_for, conversations_of, send

STOP = "/api/toolcalling/conversations/{}/stop/"


def out_of_range(sender, instance, created, **kwargs):
    """A site's receiver whose own write fails in the database: a count below zero, which the column refuses
    (a CHECK constraint on SQLite and PostgreSQL, an unsigned column on MariaDB)."""
    if created and instance.role == Message.Role.ASSISTANT:
        Message.objects.filter(pk=instance.pk).update(total_tokens=-1)


@pytest.fixture
def failing_answers() -> Iterator[None]:
    post_save.connect(out_of_range, sender=Message)
    yield
    post_save.disconnect(out_of_range, sender=Message)


@pytest.mark.parametrize("mode", ["plain", "streamed", "background"])
@pytest.mark.parametrize("limited", [False, True], ids=["no limits", "limits"])
def test_a_write_that_fails_ends_the_turn_failed(transactional_db, alice, failing_answers, mode, limited):
    (conversation,) = conversations_of(alice, 1)
    limits = [{"turns": 100, "per": "user", "period": "day"}] if limited else []
    with override_model(Answers(), USAGE_LIMITS=limits):
        outcome = send(client_for(alice), conversation, mode)
        if mode == "plain":
            assert (outcome.status, outcome.code) == (503, "turn_not_stored")
        elif mode == "streamed":
            assert outcome.status == 200 and outcome.events[-2:] == ["error", "turn_end"], outcome
        else:
            assert outcome.status == 202
        stored = Conversation.objects.get(pk=conversation)
        assert stored.status == "failed" and stored.error == "The turn could not be stored and ended failed. Try again."
        stop = client_for(alice).post(STOP.format(conversation))
        assert stop.status_code == 409 and stop.json()["code"] == "not_running"

        post_save.disconnect(out_of_range, sender=Message)
        assert send(client_for(alice), conversation, "plain").status == 201
    # The answer that could not be stored was paid for: its tokens count, though no message carries them.
    assert Message.objects.filter(conversation_id=conversation, role="user").count() == 2
    row = UsageCounter.objects.get(scope="user", key=str(alice.pk), period="day", period_start=window("day")[0])
    assert (row.turns, row.tokens) == (2, 2 * PER_CALL)
    assert Conversation.objects.get(pk=conversation).total_tokens == PER_CALL  # the stored answer's


@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite turns an integer that overflows into a float")
@pytest.mark.parametrize("mode", ["plain", "streamed", "background"])
def test_a_count_out_of_range_is_not_tried_again_by_the_turns_end(transactional_db, alice, mode):
    (conversation,) = conversations_of(alice, 1)
    limits = [{"tokens": 10**9, "per": "user", "period": "day"}]  # never reached; with a limit every write counts
    with override_model(Answers(), USAGE_LIMITS=limits):
        assert send(client_for(alice), conversation, "plain").status == 201  # makes the rows
        # The assistant's month counter is one answer short of the column's maximum.
        room = 2**63 - 1 if connection.vendor == "postgresql" else 2**64 - 1
        month = UsageCounter.objects.filter(scope="assistant", period="month")
        month.update(tokens=room - PER_CALL // 2)
        outcome = send(client_for(alice), conversation, mode)
        assert outcome.status in (200, 202, 503), outcome
        assert Conversation.objects.get(pk=conversation).status == "failed"
        assert client_for(alice).post(STOP.format(conversation)).status_code == 409
        month.update(tokens=0)
        assert send(client_for(alice), conversation, "plain").status == 201
    user_day = UsageCounter.objects.get(scope="user", key=str(alice.pk), period="day", period_start=window("day")[0])
    # The failed turn's message counted (with the claim); its answer's tokens could not be, in any row.
    assert (user_day.turns, user_day.tokens) == (3, 2 * PER_CALL)
    assert Conversation.objects.get(pk=conversation).total_tokens == 2 * PER_CALL  # its answer was not stored


@pytest.mark.django_db(transaction=True, databases=["default", WRITES])
@pytest.mark.parametrize("limited", [False, True], ids=["no limits", "limits"])
def test_a_failed_turns_usage_is_counted_in_a_transaction_on_the_routers_database(alice, failing_answers, limited):
    (conversation,) = conversations_of(alice, 1)
    limits = [{"turns": 100, "per": "user", "period": "day"}] if limited else []
    counted = []  # for each update of the counters: the connection it ran on, and whether in a transaction

    def watch(alias):
        def wrapper(execute, sql, params, many, context):
            if sql.lstrip().upper().startswith("UPDATE") and "toolcalling_usagecounter" in sql:
                counted.append((alias, connections[alias].in_atomic_block))
            return execute(sql, params, many, context)

        return wrapper

    with (
        override_model(Answers(), USAGE_LIMITS=limits),
        override_settings(DATABASE_ROUTERS=[AppWritesElsewhere()]),
        connections["default"].execute_wrapper(watch("default")),
        connections[WRITES].execute_wrapper(watch(WRITES)),
    ):
        outcome = send(client_for(alice), conversation, "plain")
    assert (outcome.status, outcome.code) == (503, "turn_not_stored")
    # The answer that could not be stored is counted by itself once the turn ended failed: there, in one transaction.
    assert counted and set(counted) == {(WRITES, True)}
    row = UsageCounter.objects.get(scope="user", key=str(alice.pk), period="day", period_start=window("day")[0])
    assert (row.turns, row.tokens) == (1, PER_CALL)
