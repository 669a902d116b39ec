"""A claim whose turn never runs (its task could not be queued) is given back with the turn it counted, so the
counters still equal the stored messages and the limit has its room again."""

import pytest

from toolcalling import Assistant
from toolcalling.engine import Turn
from toolcalling.exceptions import UsageLimitExceeded
from toolcalling.models import Conversation, UsageCounter
from toolcalling.testutils import override_model
from toolcalling.usage import window

from .conftest import Answers, conversations_of, reconcile


def turns_counted(user) -> int:
    row = UsageCounter.objects.get(scope="user", key=str(user.pk), period="day", period_start=window("day")[0])
    return row.turns


@pytest.mark.parametrize("limited", [False, True], ids=["no limits", "limits"])
def test_a_released_claim_takes_back_its_turn(db, alice, limited):
    first, second = (Conversation.objects.get(pk=pk) for pk in conversations_of(alice, 2))
    limits = [{"turns": 1, "per": "user", "period": "day"}] if limited else []
    with override_model(Answers(), USAGE_LIMITS=limits):
        turn = Turn(Assistant.get("helper"), first, user=alice)
        turn.claim()  # as a background message does before it queues the turn
        assert Conversation.objects.get(pk=first.pk).status == "running"
        if limited:
            assert turns_counted(alice) == 1
            with pytest.raises(UsageLimitExceeded):
                Turn(Assistant.get("helper"), second, user=alice).claim()
        assert turn.release() is True
        assert Conversation.objects.get(pk=first.pk).status == "idle"
        assert turn.release() is False  # given back once
        reconcile(alice)  # no message, no turn counted
        # The room is back: a new message is taken.
        assert Assistant.get("helper").run(alice, "hi", second).messages[-1].content == "Done."
    assert reconcile(alice)["turns"] == 1
