"""Turns running at the same time share a limit: each checks the counters before every model call, so together
they overshoot it by at most one model call each, never more."""

import threading

import pytest
from django.db import connections

from toolcalling import Assistant
from toolcalling.exceptions import UsageLimitExceeded
from toolcalling.models import Conversation
from toolcalling.testing import Reply, Usage
from toolcalling.testing import ToolCall as ScriptedCall
from toolcalling.testutils import override_model

from .conftest import history_problems, used

TURNS = 3
LIMIT = 1000
PER_CALL = 100  # tokens of every model answer


class Rounds:
    """A model that never gives a final answer: each answer asks for one more tool call. An answer is sent only
    once every running turn has asked (a barrier), so the turns pass their checks at the same moments and then
    all spend together: the worst case for a shared limit."""

    model_name = "rounds"

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties)
        self.lock = threading.Lock()
        self.requests = 0
        self.rejected: list[list[str]] = []

    def __call__(self, body):
        with self.lock:
            self.requests += 1
        try:
            self.barrier.wait(timeout=60)  # a bound for a broken test, not a measure: rounds release at once
        except threading.BrokenBarrierError:
            pass  # a turn has ended: the others go on unsynchronised
        return Reply(tool_calls=[ScriptedCall("add", '{"a": 1, "b": 1}')], usage=Usage(PER_CALL - 10, 10))

    def on_rejected(self, body, errors):
        self.rejected.append(errors)


@pytest.mark.django_db(transaction=True)
def test_parallel_turns_overshoot_a_shared_limit_by_at_most_one_model_call_each(alice):
    rounds = Rounds(TURNS)
    conversations = [Conversation.objects.create(user=alice, assistant_id="helper") for _ in range(TURNS)]
    outcomes: list[object] = [None] * TURNS

    def turn(index: int) -> None:
        try:
            Assistant.get("helper").run(alice, f"turn {index}", conversations[index])
        except Exception as exc:  # the outcome under test
            outcomes[index] = exc
        finally:
            rounds.barrier.abort()  # the others must not wait for this turn's next request
            connections.close_all()

    limits = [{"tokens": LIMIT, "per": "user", "period": "day"}]
    with override_model(rounds, USAGE_LIMITS=limits, MAX_MODEL_CALLS=1000, MAX_TOTAL_TOOL_CALLS=1000,
                        MAX_CALLS_PER_TOOL=1000):  # fmt: skip
        threads = [threading.Thread(target=turn, args=(i,)) for i in range(TURNS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)

    assert all(isinstance(outcome, UsageLimitExceeded) for outcome in outcomes), outcomes
    spent = used("user", alice.pk)["tokens"]
    assert spent == rounds.requests * PER_CALL  # every answer was counted, once
    # Each turn checked the counters before each of its model calls: a call started only while the total was
    # under the limit, and at most one call per turn was under way when the limit was crossed.
    assert LIMIT <= spent < LIMIT + TURNS * PER_CALL
    assert rounds.rejected == []
    for conversation in conversations:
        conversation.refresh_from_db()
        assert conversation.status == "failed"
        assert history_problems(conversation.pk) == []
    print(f"\n{TURNS} parallel turns spent {spent} tokens under a limit of {LIMIT} ({rounds.requests} model calls)")
