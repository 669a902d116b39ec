"""Parallel turns of one user count into the same rows (the user's and the assistant's counters) without a
deadlock: 20 rounds of 20 conversations at once, every turn answered 201, every turn counted."""

import threading
import time

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from tests import services
from toolcalling.models import UsageCounter
from toolcalling.testutils import override_model
from toolcalling.usage import window
from toolcalling.usage._meter import ALWAYS_COUNTED

from .conftest import Answers, Outcome, at_once, client_for, conversations_of, reconcile, send, tally

ROUNDS = 20
PARALLEL = 20


@pytest.mark.parametrize("limited", [False, True], ids=["no limits", "limits"])
def test_rounds_of_parallel_conversations_never_deadlock(transactional_db, alice, limited):
    answers = Answers()
    # High limits are never reached, but make every write count at once (limits apply).
    limits = [{"tokens": 10**9, "per": "user", "period": "day"}, {"turns": 10**6, "per": "site", "period": "hour"}]
    conversations = conversations_of(alice, PARALLEL)
    with override_model(answers, USAGE_LIMITS=limits if limited else []):
        for round_ in range(ROUNDS):
            mode = ("plain", "streamed", "background")[round_ % 3]
            outcomes = at_once(PARALLEL, lambda i, mode=mode: send(client_for(alice), conversations[i], mode))
            assert {o.status for o in outcomes} == {202 if mode == "background" else 200 if mode == "streamed"
                                                    else 201}, (round_, tally(outcomes))  # fmt: skip
            assert all(o.events[-1] == "turn_end" and "error" not in o.events for o in outcomes if o.events)
    stored = reconcile(alice)
    assert stored["turns"] == ROUNDS * PARALLEL == answers.requests


@pytest.mark.skipif(settings.DATABASE == "sqlite", reason="SQLite locks the whole database: no deadlock of rows")
def test_a_turn_whose_counter_rows_meet_a_deadlock_tries_them_again(transactional_db, alice, caplog):
    """A turn makes the counter rows it counts in before its claim, in one insert of its own (the first turns of
    a period, or of a new assistant). Inserts of the same new keys at once can deadlock, and the database then
    rolls one back: that insert is tried again, and the message is taken, never answered 503."""
    (conversation,) = conversations_of(alice, 1)
    now = timezone.now()
    keys = {"user": str(alice.pk), "assistant": "helper"}
    rows = sorted((scope, keys[scope], period, window(period, now)[0]) for scope, period in ALWAYS_COUNTED)
    first, last = rows[0], rows[-1]  # the turn inserts them in this order

    def counter(row: tuple) -> UsageCounter:
        scope, key, period, start = row
        return UsageCounter(scope=scope, key=key, period=period, period_start=start, updated_at=now,
                            user_id=alice.pk if scope == "user" else None)  # fmt: skip

    answered: list[Outcome] = []
    with override_model(Answers()):
        with transaction.atomic():
            # Another writer, the larger transaction (the one the database keeps), holds the turn's last row...
            UsageCounter.objects.bulk_create(
                [counter(("site", f"another-{n}", "day", first[3])) for n in range(50)] + [counter(last)]
            )
            sender = threading.Thread(target=lambda: answered.append(send(client_for(alice), conversation, "plain")))
            sender.start()
            wait_for_a_lock_wait()  # the turn's insert has made the first rows and waits for the last one
            # ...and now inserts the turn's first row: each waits for the other, and the database rolls one back.
            UsageCounter.objects.bulk_create([counter(first)], ignore_conflicts=True)
        sender.join(timeout=60)
    (outcome,) = answered
    assert outcome.status == 201, outcome
    assert "a transaction was rolled back" in caplog.text  # the turn's insert was the one rolled back, and retried
    assert UsageCounter.objects.filter(scope__in=["user", "assistant"], turns=1).count() == len(rows)


def wait_for_a_lock_wait() -> None:
    """Until an insert of counter rows waits for a lock (on the database of this pass)."""
    query = {
        # An insert waits for the transaction that holds the same key (pg_stat_activity would show this
        # transaction's snapshot of it: pg_locks is read live).
        "postgresql": "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'",
        "mysql": "SELECT count(*) FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT'"
        " AND trx_query LIKE 'INSERT IGNORE INTO `toolcalling_usagecounter`%%'",
    }[connection.vendor]

    def waiting() -> bool:
        # InnoDB refreshes what innodb_trx shows only when it was not read for 0.1 s: ask less often than that.
        time.sleep(0.2)
        with connection.cursor() as cursor:
            cursor.execute(query)
            return cursor.fetchone()[0] > 0

    services.wait_until(waiting, timeout=30, what="the turn's insert to wait for the other writer's row")
