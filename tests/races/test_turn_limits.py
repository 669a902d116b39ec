"""A turn limit holds exactly under parallel requests: N messages of one user sent at once, in every mode,
against a limit of L turns start L turns, never more, and the other N - L are refused with 429."""

import pytest

from toolcalling.testutils import override_model

from .conftest import Answers, at_once, client_for, conversations_of, modes_for, reconcile, send, tally

LIMIT = 5


@pytest.mark.parametrize("count", [20, 50])
@pytest.mark.parametrize("mode", ["plain", "streamed", "background", "mixed"])
def test_parallel_messages_start_at_most_the_turns_a_limit_allows(transactional_db, alice, mode, count):
    answers = Answers()
    conversations = conversations_of(alice, count)
    modes = modes_for(mode, count)
    limits = [{"turns": LIMIT, "per": "user", "period": "day"}]
    with override_model(answers, USAGE_LIMITS=limits):
        outcomes = at_once(count, lambda i: send(client_for(alice), conversations[i], modes[i]))

    accepted = [o for o in outcomes if o.status in (200, 201, 202)]
    refused = [o for o in outcomes if o.status == 429]
    assert len(accepted) == LIMIT, tally(outcomes)
    assert len(refused) == count - LIMIT and {o.code for o in refused} == {"usage_limit_exceeded"}, tally(outcomes)
    assert all(o.events[-1] == "turn_end" and "error" not in o.events for o in accepted if o.events), outcomes
    stored = reconcile(alice)
    assert stored["turns"] == LIMIT and answers.requests == LIMIT
    assert answers.rejected == []
