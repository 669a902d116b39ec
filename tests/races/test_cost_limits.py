"""A money limit under parallel requests, as a token limit: a model call starts only while the counters are
under the limit, so N turns of one user at once spend at most the limit plus one model call per running turn,
and the counters hold exactly the cost the stored answers say."""

from decimal import Decimal

import pytest
from django.db.models import Sum

from toolcalling.models import Message, UsageCounter
from toolcalling.testutils import override_model
from toolcalling.usage import window

from .conftest import PER_CALL, Answers, at_once, client_for, conversations_of, modes_for, reconcile, send, tally

# A dollar a token: each answer (PER_CALL tokens) costs PER_CALL dollars, and the limit leaves room for four
# and a half of them.
PRICES = {"race-model": {"input": "1000000", "output": "1000000"}}
LIMIT = Decimal("450")


@pytest.mark.parametrize("count", [20, 50])
@pytest.mark.parametrize("mode", ["plain", "streamed", "background", "mixed"])
def test_parallel_turns_spend_at_most_a_money_limit_and_one_call_each(transactional_db, alice, mode, count):
    answers = Answers()
    conversations = conversations_of(alice, count)
    modes = modes_for(mode, count)
    limits = [{"cost": str(LIMIT), "per": "user", "period": "day"}]
    with override_model(answers, MODEL="race-model", PRICES=PRICES, USAGE_LIMITS=limits):
        outcomes = at_once(count, lambda i: send(client_for(alice), conversations[i], modes[i]))

    assert {o.status for o in outcomes} <= {200, 201, 202, 429}, tally(outcomes)
    assert {o.code for o in outcomes if o.status == 429} <= {"usage_limit_exceeded"}, tally(outcomes)
    reconcile(alice)
    spent = Message.objects.filter(conversation__user=alice).aggregate(total=Sum("cost"))["total"]
    assert spent == answers.requests * PER_CALL  # every answer priced, stored and counted, once
    for period in ("day", "month"):
        row = UsageCounter.objects.get(scope="user", key=str(alice.pk), period=period, period_start=window(period)[0])
        assert row.cost == spent, (period, row.cost, spent)
    turns = Message.objects.filter(conversation__user=alice, role=Message.Role.USER).count()
    assert LIMIT <= spent <= LIMIT - 1 + turns * PER_CALL
    assert answers.rejected == []
