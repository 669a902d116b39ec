"""Parallel turns of one user count into the same rows (the user's and the assistant's counters) without a
deadlock: 20 rounds of 20 conversations at once, every turn answered 201, every turn counted."""

import pytest

from toolcalling.testutils import override_model

from .conftest import Answers, at_once, client_for, conversations_of, reconcile, send, tally

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
