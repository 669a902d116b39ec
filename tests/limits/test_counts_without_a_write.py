"""What a model call used is counted even when the turn has no write left to carry it (the user deleted the
conversation while the model answered): every quantity, in every row the turn counts in, this period's."""

import pytest
from django.db import connections, transaction
from django.utils import timezone

from toolcalling.models import Conversation, UsageCounter
from toolcalling.testing import Reply, ToolCall
from toolcalling.testing import Usage as Reported
from toolcalling.testutils import override_toolcalling
from toolcalling.usage import Counts

from .conftest import post, used


@pytest.mark.django_db(transaction=True)
@pytest.mark.toolcalling(USAGE_LIMITS=[{"tool_calls": 100, "per": "site", "period": "hour"}])
@pytest.mark.parametrize("cleaned", [False, True], ids=["rows kept", "rows deleted meanwhile"])
def test_tokens_and_tool_calls_of_an_answer_that_could_not_be_stored_are_counted(
    api, model, new_conversation, alice, cleaned
):
    conversation = new_conversation()

    def delete_then_call(body):
        Conversation.objects.filter(pk=conversation).delete()  # the user deletes it while the model writes
        if cleaned:  # and a cleanup job deletes the counter rows the process remembers: they are made again
            UsageCounter.objects.all().delete()
        connections.close_all()  # this server thread's connection
        calls = [ToolCall(name="add", arguments='{"a": 1, "b": 2}'), ToolCall(name="whoami")]
        return Reply(tool_calls=calls, usage=Reported(30, 12))

    model.respond(delete_then_call)
    before = timezone.now()
    response = post(api, conversation, "hello")
    assert response.status_code == 409 and response.json()["code"] == "turn_interrupted"
    turns = 0 if cleaned else 1  # the turn itself was counted when the message was stored
    expected = {"tokens": 42, "turns": turns, "tool_calls": 2}
    assert used("user", alice.pk) == used("assistant", "helper", "month") == used("site", "", "hour") == expected
    assert all(before <= row.updated_at <= timezone.now() for row in UsageCounter.objects.all())


@pytest.mark.parametrize(
    ("reserve", "deleted"),
    [(False, False), (False, True), (True, False), (True, True)],
    ids=["count", "count, rows deleted meanwhile", "reserve", "reserve, rows deleted meanwhile"],
)
def test_every_count_marks_the_rows_it_adds_to_as_updated_at_its_moment(db, reserve, deleted):
    from tests.limits.test_reservation import DAY, MONTH, meter

    moment = timezone.now() + timezone.timedelta(seconds=5)  # the moment the caller has, not the clock's
    with override_toolcalling():  # counter ids this process remembers from other tests are forgotten
        counting = meter(DAY, MONTH)
        made = moment - timezone.timedelta(seconds=1)
        counting.row_ids(made)  # a turn makes its rows first (``prepare``), marked as updated then
        assert {row.updated_at for row in UsageCounter.objects.all()} == {made}
        if deleted:  # a cleanup job deleted the rows the process remembers: they are made again
            UsageCounter.objects.all().delete()
        with transaction.atomic():
            counting.count(Counts(tokens=7, turns=1), moment, reserve=reserve, status="idle")
    rows = {(row.scope, row.tokens, row.turns, row.updated_at) for row in UsageCounter.objects.all()}
    assert rows == {("site", 7, 1, moment), ("assistant", 7, 1, moment)}


def test_the_rows_a_turn_makes_before_it_counts_are_marked_as_made_then(db):
    from tests.limits.test_reservation import DAY, MONTH, meter

    before = timezone.now()
    with override_toolcalling():
        meter(DAY, MONTH).prepare()
    assert UsageCounter.objects.count() == 2
    assert all(before <= row.updated_at <= timezone.now() for row in UsageCounter.objects.all())


def test_a_process_that_finds_the_rows_made_reads_them_and_inserts_only_the_new_ones(db):
    """A process that does not know a turn's rows yet (a new worker, a restart) reads them first: rows another
    process made are found without an insert, which would lock or wait for them; only the missing are inserted."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.limits.test_reservation import DAY, MONTH, meter

    with override_toolcalling():  # another process made the day's row
        meter(DAY).prepare()
    (made,) = UsageCounter.objects.all()
    with override_toolcalling(), CaptureQueriesContext(connection) as found:  # this process knows no rows
        meter(DAY).prepare()
    with override_toolcalling():
        with CaptureQueriesContext(connection) as missing:
            meter(DAY, MONTH).prepare()
        with CaptureQueriesContext(connection) as remembered:  # and then knows them
            ids = meter(DAY, MONTH).row_ids(timezone.now())
    inserts = [[query for query in queries if query["sql"].lstrip().upper().startswith("INSERT")]
               for queries in (found, missing)]  # fmt: skip
    assert [len(found), len(inserts[0])] == [1, 0]  # one read, no insert
    assert len(inserts[1]) == 1 and "toolcalling_usagecounter" in inserts[1][0]["sql"]
    assert made.pk in ids and UsageCounter.objects.count() == 2 and UsageCounter.objects.get(pk=made.pk) == made
    assert len(remembered) == 0
