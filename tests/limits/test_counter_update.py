"""The counters' ``UPDATE`` is built once per thread and reused: every turn still sends the same statement, with
its lock in the order of the row ids where the database has row locks, and counts into the rows."""

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from toolcalling.models import UsageCounter
from toolcalling.usage._meter import Counts, Meter, rows_to_add_to

pytestmark = pytest.mark.django_db(transaction=True)


def meter(user_id: int) -> Meter:
    from toolcalling.usage._meter import ALWAYS_COUNTED, Counted

    return Meter([], [Counted(scope, str(user_id), period, user_id) for scope, period in ALWAYS_COUNTED[:2]])


def shape(sql: str) -> str:
    """A statement with its values left out (the captured SQL shows them)."""
    return re.sub(r"'[^']*'|\b\d+\b", "?", sql)


def counted(m: Meter, tokens: int) -> str:
    """The SQL of the one ``UPDATE`` that counts ``tokens``, its values left out."""
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        m.count(Counts(tokens=tokens, turns=1), timezone.now())
    updates = [query["sql"] for query in queries.captured_queries if query["sql"].startswith("UPDATE")]
    assert len(updates) == 1, queries.captured_queries
    return shape(updates[0])


def test_each_count_sends_the_same_update_and_adds_to_the_rows(alice):
    m = meter(alice.pk)
    m.prepare()
    first = counted(m, 5)
    again = counted(m, 7)
    assert first == again
    if connection.features.has_select_for_update and connection.features.update_can_self_select:
        assert "FOR UPDATE" in first and "ORDER BY" in first, first
    rows = UsageCounter.objects.filter(key=str(alice.pk), scope="user")
    assert sorted(rows.values_list("tokens", "turns")) == [(12, 2), (12, 2)]


def test_another_thread_builds_its_own_and_counts_into_the_same_rows(alice):
    m = meter(alice.pk)
    m.prepare()
    ids = m.row_ids(timezone.now())
    here = rows_to_add_to("default", ids, locked=True)
    assert rows_to_add_to("default", ids, locked=True) is here

    def elsewhere() -> object:
        try:
            built = rows_to_add_to("default", ids, locked=True)
            with transaction.atomic():
                m.count(Counts(tokens=3, turns=1), timezone.now())
            return built
        finally:
            connection.close()

    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(elsewhere).result()
    assert other is not here
    with transaction.atomic():  # a locking query is compiled only in one
        assert shape(str(other.query)) == shape(str(here.query))
    rows = UsageCounter.objects.filter(pk__in=ids)
    assert sorted(rows.values_list("tokens", flat=True)) == [3, 3]
