"""A turn whose process died is taken over by the sweep once it has been quiet for ``STALE_TURN_TIMEOUT`` and goes
on from what is stored: no model request repeated whose answer was stored, no call run twice.

Each death is the state a killed process leaves: the turn is driven step by step (``Turn.iter()``) up to the
point of death and then never resumed, its conversation left ``running``, and its last write made to look
older than the timeout. Tasks run eagerly here."""

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.approval.commits import relaxed_writes
from tests.approval.test_decisions import assert_history_valid, tool_message
from tests.approval.test_idempotency import delivered_keys
from tests.approvalapp.models import Counter
from toolcalling import Assistant, approval, engine
from toolcalling.conf import toolcalling_settings
from toolcalling.engine import Turn, conversation_for
from toolcalling.engine._turn import CallsHandled, Replied
from toolcalling.exceptions import TurnError, TurnInterrupted
from toolcalling.models import Conversation, Message, ToolCall

abandoned = []  # the generators of the "dead" turns: kept, so they are never closed while a test runs


@pytest.fixture(autouse=True)
def forget_dead_turns(db):
    yield
    for steps in abandoned:  # as the dead process never could: whatever they still write is refused
        try:
            steps.close()
        except TurnInterrupted:
            pass
    abandoned.clear()


def turn_until(alice, model, content, stop):
    """Run a turn of the ``till`` assistant until ``stop(step)`` is true, then leave it there for good."""
    assistant = Assistant.get("till")
    conversation = conversation_for(assistant, alice, None)
    steps = Turn(assistant, conversation, user=alice).iter(content)
    abandoned.append(steps)
    for step in steps:
        if stop(step):
            break
    quiet_since = timezone.now() - timedelta(seconds=toolcalling_settings.STALE_TURN_TIMEOUT + 1)
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=quiet_since)
    assert Conversation.objects.get(pk=conversation.pk).status == "running"
    return conversation


def requests_made(model):
    return len(model.requests)


def test_a_turn_that_died_after_storing_the_answer_runs_its_calls_once_and_asks_only_for_what_is_next(
    alice, model, django_capture_on_commit_callbacks
):
    # Died with the answer stored and its calls not run (or the first one running: nothing stored tells).
    model.calls(("send_receipt", {"amount": 1}), ("charge", {"amount": 2}))
    conversation = turn_until(alice, model, "receipt and charge", lambda step: isinstance(step, Replied))
    asked = requests_made(model)
    model.reply("Done: receipt sent, card charged.")
    with django_capture_on_commit_callbacks(execute=True):
        result = approval.sweep()
    assert [c.pk for c in result.resumed] == [conversation.pk]
    receipt, charge = ToolCall.objects.filter(conversation=conversation).order_by("index")
    # The first call may have started: its tool is idempotent, so it runs again, with the same key. The second
    # cannot have started (calls run one after another): it runs now, for the first time.
    assert (receipt.status, charge.status) == ("succeeded", "succeeded")
    assert list(delivered_keys("receipt").values()) == [1] and list(delivered_keys("charge").values()) == [1]
    assert requests_made(model) == asked + 1  # the stored answer was not asked for again
    conversation.refresh_from_db()
    assert conversation.status == "idle"
    assert Message.objects.filter(conversation=conversation).last().content == "Done: receipt sent, card charged."
    assert_history_valid(conversation.pk)
    model.assert_done()


def test_a_call_that_may_have_started_in_a_dead_turn_waits_for_a_person_and_the_rest_run(
    alice, approver, model, django_capture_on_commit_callbacks
):
    model.calls(("charge", {"amount": 2}), ("send_receipt", {"amount": 2}))
    conversation = turn_until(alice, model, "charge and receipt", lambda step: isinstance(step, Replied))
    with django_capture_on_commit_callbacks(execute=True):
        approval.sweep()
    charge, receipt = ToolCall.objects.filter(conversation=conversation).order_by("index")
    assert (charge.status, charge.error) == ("outcome_unknown", engine.INTERRUPTED)
    assert charge.arguments == {"amount": 2} and charge.worker  # as the tool got them; who was to run it
    assert delivered_keys("charge") == {}  # not run again silently
    assert receipt.status == "succeeded"  # it had not started: run now
    assert Conversation.objects.get(pk=conversation.pk).status == "awaiting_approval"
    asked = requests_made(model)

    model.reply("Your card was charged.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.settle(charge, approver, "succeeded", "Charged 2.")
    assert tool_message(charge).content == "Charged 2."
    assert requests_made(model) == asked + 1
    assert Conversation.objects.get(pk=conversation.pk).status == "idle"
    assert delivered_keys("charge") == {}
    assert_history_valid(conversation.pk)
    model.assert_done()


def test_a_turn_that_died_between_two_calls_runs_only_those_not_answered(
    alice, model, django_capture_on_commit_callbacks
):
    model.calls(("charge", {"amount": 1}), ("charge", {"amount": 2}))
    model.reply("Both charged.")
    assistant = Assistant.get("till")
    conversation = conversation_for(assistant, alice, None)
    turn = Turn(assistant, conversation, user=alice)
    steps = turn.iter("two charges")
    abandoned.append(steps)
    answered = next(steps)
    assert isinstance(answered, Replied)
    first = answered.calls[0]
    turn.calls.handle(first)  # the first call ran and its result was stored; then the process died
    Conversation.objects.filter(pk=conversation.pk).update(
        updated_at=timezone.now() - timedelta(seconds=toolcalling_settings.STALE_TURN_TIMEOUT + 1)
    )
    # The second call is now the first open one: nothing stored says whether it started, so it waits.
    with django_capture_on_commit_callbacks(execute=True):
        approval.sweep()
    statuses = list(
        ToolCall.objects.filter(conversation=conversation).order_by("index").values_list("status", flat=True)
    )
    assert statuses == ["succeeded", "outcome_unknown"]
    assert sum(delivered_keys("charge").values()) == 1
    assert Conversation.objects.get(pk=conversation.pk).status == "awaiting_approval"


def test_a_turn_that_died_between_a_result_and_the_next_request_asks_the_model_once_and_runs_nothing_again(
    alice, model, django_capture_on_commit_callbacks
):
    model.calls(("charge", {"amount": 5}))
    conversation = turn_until(alice, model, "charge 5", lambda step: isinstance(step, CallsHandled))
    asked = requests_made(model)
    model.reply("Charged 5.")
    with django_capture_on_commit_callbacks(execute=True):
        assert [c.pk for c in approval.sweep().resumed] == [conversation.pk]
    assert list(delivered_keys("charge").values()) == [1]
    assert requests_made(model) == asked + 1
    assert Conversation.objects.get(pk=conversation.pk).status == "idle"
    assert_history_valid(conversation.pk)
    model.assert_done()


def test_a_turn_quiet_for_less_than_the_timeout_is_left_alone(alice, model):
    model.calls(("charge", {"amount": 5}))
    conversation = turn_until(alice, model, "charge 5", lambda step: isinstance(step, Replied))
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now())
    assert approval.sweep().resumed == []
    assert Conversation.objects.get(pk=conversation.pk).status == "running"
    assert delivered_keys("charge") == {}


@pytest.mark.django_db(transaction=True)  # real transactions: their BEGIN and COMMIT are what is counted
def test_a_result_is_on_disk_before_the_next_call_of_its_answer_runs(model, alice):
    """Were a result lost with a database crash (a commit that did not wait for the disk), the turn taken over
    would take the next call for one that never started and run it again: only the last result of an answer
    may skip the wait (PostgreSQL's ``SET LOCAL synchronous_commit``; other databases send nothing)."""
    assistant = Assistant.get("till")
    model.calls(("charge", {"amount": 1}), ("charge", {"amount": 2}))
    model.reply("Charged twice.")
    with CaptureQueriesContext(connection) as queries:
        assistant.run(alice, "two charges")
    results = relaxed_writes(queries, "UPDATE", "toolcalling_toolcall")  # per stored result: whether its commit relaxed
    assert results == ([False, True] if connection.vendor == "postgresql" else [False, False])
    assert sum(delivered_keys("charge").values()) == 2


@pytest.mark.django_db(transaction=True)  # real transactions: their BEGIN and COMMIT are what is counted
def test_a_result_before_a_call_that_may_run_again_skips_the_wait(model, alice):
    """The next call taken for one that never started runs again: harmless when its tool may (idempotent, with the
    same key; atomic, whose writes go with the lost result), so only a result before a call that may not waits."""
    model.calls(("charge", {"amount": 1}), ("send_receipt", {"amount": 1}), ("book_seat", {"seat": "3F"}),
                ("charge", {"amount": 2}))  # fmt: skip
    model.reply("Charged, sent, booked, charged.")
    with CaptureQueriesContext(connection) as queries:
        Assistant.get("till").run(alice, "four calls")
    results = relaxed_writes(queries, "UPDATE", "toolcalling_toolcall")
    # charge before a receipt, the receipt before an atomic booking: relaxed; the booking before a charge waits.
    assert results == ([True, True, False, True] if connection.vendor == "postgresql" else [False] * 4)
    assert sum(delivered_keys("charge").values()) == 2 and seats("3F") == 1


@pytest.mark.django_db(transaction=True)
def test_a_turn_taken_over_stores_a_result_on_disk_before_the_next_call_that_may_not_run_twice(model, alice):
    # The receipt runs again (it may have started), then the charge for the first time: were the receipt's result
    # lost with a database crash, the next takeover would take the charge for a call that never started.
    model.calls(("send_receipt", {"amount": 1}), ("charge", {"amount": 2}))
    conversation = turn_until(alice, model, "receipt and charge", lambda step: isinstance(step, Replied))
    model.reply("Done: receipt sent, card charged.")
    with CaptureQueriesContext(connection) as queries:
        assert [c.pk for c in approval.sweep().resumed] == [conversation.pk]
    results = relaxed_writes(queries, "UPDATE", "toolcalling_toolcall")
    assert results[:2] == ([False, True] if connection.vendor == "postgresql" else [False, False])
    assert list(delivered_keys("charge").values()) == [1]
    assert Conversation.objects.get(pk=conversation.pk).status == "idle"


def seats(seat):
    row = Counter.objects.filter(name=f"seat-{seat}").first()
    return row.value if row else 0


def test_an_atomic_tools_writes_are_stored_with_its_result_or_not_at_all(alice, model):
    refused = []

    def refuse_tool_messages(sender, instance, created, **kwargs):
        if created and instance.role == "tool" and not refused:
            refused.append(instance.content)
            raise DatabaseError("the disk is full")  # storing the result fails (once)

    model.calls(("book_seat", {"seat": "12A"}))
    post_save.connect(refuse_tool_messages, sender=Message)
    try:
        with pytest.raises(TurnError):
            Assistant.get("till").run(alice, "book 12A")
    finally:
        post_save.disconnect(refuse_tool_messages, sender=Message)
    assert refused == ["booked 12A"]  # the tool ran ...
    assert seats("12A") == 0  # ... and what it wrote went with the result that could not be stored
    first = ToolCall.objects.get()
    assert first.status == "failed"  # answered when the turn failed; the model is told
    model.calls(("book_seat", {"seat": "12A"}))
    model.reply("Booked.")
    Assistant.get("till").run(alice, "try again", conversation=first.conversation)
    assert seats("12A") == 1  # booked once: by the call whose result was stored
    assert ToolCall.objects.filter(status="succeeded").count() == 1
    model.assert_done()


def test_what_a_failing_atomic_tool_wrote_is_undone_and_its_error_goes_to_the_model(alice, model):
    model.calls(("book_seat", {"seat": "broken"}))
    model.reply("That seat is broken.")
    Assistant.get("till").run(alice, "book the broken seat")
    assert seats("broken") == 0
    assert ToolCall.objects.get().error == "ValueError: the seat is broken"
    model.assert_done()


def test_a_dead_turns_atomic_call_runs_again_exactly_once(alice, model, django_capture_on_commit_callbacks):
    # Its process died inside the transaction: what the tool wrote went with it, so it simply runs again.
    model.calls(("book_seat", {"seat": "7C"}))
    conversation = turn_until(alice, model, "book 7C", lambda step: isinstance(step, Replied))
    model.reply("Booked 7C.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.sweep()
    assert ToolCall.objects.get(conversation=conversation).status == "succeeded"
    assert seats("7C") == 1
    assert Conversation.objects.get(pk=conversation.pk).status == "idle"
    model.assert_done()


def test_a_call_of_unknown_outcome_in_a_turn_taken_over_by_the_next_message_is_answered(
    alice, model, django_capture_on_commit_callbacks
):
    # A dead turn's call that a stray delivery found with no worker behind it waits as outcome_unknown, while the
    # conversation is still the dead turn's. The next message takes the conversation over: the call is answered
    # (it may have run, nobody knows), so the history it sends is one the API takes.
    model.calls(("charge", {"amount": 2}))
    conversation = turn_until(alice, model, "charge", lambda step: isinstance(step, Replied))
    (charge,) = ToolCall.objects.filter(conversation=conversation)
    assert approval.run(charge.pk) is False
    assert ToolCall.objects.get(pk=charge.pk).status == "outcome_unknown"
    model.reply("I could not tell whether the card was charged.")
    result = Assistant.get("till").run(alice, "Well?", conversation=conversation)
    assert result.reply == "I could not tell whether the card was charged."
    charge.refresh_from_db()
    assert charge.status == "failed" and "whether it took effect is unknown" in tool_message(charge).content
    assert delivered_keys("charge") == {}  # never run
    assert_history_valid(conversation.pk)
    assert not model.rejected, [r.errors for r in model.rejected]


def test_staff_are_told_of_a_call_of_unknown_outcome_in_a_turn_the_sweep_took_over(
    alice, approver, model, mailoutbox, django_capture_on_commit_callbacks
):
    approver.email = "carol@example.com"
    approver.save()
    model.calls(("charge", {"amount": 2}), ("send_receipt", {"amount": 2}))
    conversation = turn_until(alice, model, "charge and receipt", lambda step: isinstance(step, Replied))
    with django_capture_on_commit_callbacks(execute=True):
        approval.sweep()
        approval.sweep()  # found once, told once
    charge = ToolCall.objects.get(conversation=conversation, name="charge")
    assert charge.status == "outcome_unknown"
    [mail] = mailoutbox
    assert mail.to == ["carol@example.com"] and mail.subject == "Outcome unknown: charge"
    assert f"/admin/toolcalling/toolcall/{charge.pk}/change/" in mail.body
