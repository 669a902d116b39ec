"""A token limit under parallel requests: a model call starts only while the counters are under the limit, so N
turns of one user at once spend at most the limit plus one model call per running turn, counted exactly."""

import pytest

from toolcalling.testutils import override_model

from .conftest import PER_CALL, Answers, at_once, client_for, conversations_of, modes_for, reconcile, send, tally

LIMIT = 450  # room for four and a half answers before the limit is reached


@pytest.mark.parametrize("count", [20, 50])
@pytest.mark.parametrize("mode", ["plain", "streamed", "background", "mixed"])
def test_parallel_turns_spend_at_most_a_token_limit_and_one_call_each(transactional_db, alice, mode, count):
    answers = Answers()
    conversations = conversations_of(alice, count)
    modes = modes_for(mode, count)
    limits = [{"tokens": LIMIT, "per": "user", "period": "day"}]
    with override_model(answers, USAGE_LIMITS=limits):
        outcomes = at_once(count, lambda i: send(client_for(alice), conversations[i], modes[i]))

    # Every request was answered as documented: its turn ran, or it was refused (429) or ended by the limit.
    assert {o.status for o in outcomes} <= {200, 201, 202, 429}, tally(outcomes)
    assert {o.code for o in outcomes if o.status == 429} <= {"usage_limit_exceeded"}, tally(outcomes)
    stored = reconcile(alice)
    assert stored["tokens"] == answers.requests * PER_CALL  # every answer stored and counted, once
    # Every model call started while the counters were under the limit, so only the calls under way when it
    # was crossed go beyond it: at most one per turn that had started.
    assert LIMIT <= stored["tokens"] <= LIMIT - 1 + stored["turns"] * PER_CALL
    assert answers.rejected == []
