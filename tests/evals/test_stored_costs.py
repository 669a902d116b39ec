"""A stored eval run's costs fit their columns (``Decimal(14, 6)``): a case whose cost is larger than that (a
conversation's cost may be up to ten thousand million) is stored without a cost, and so is a run whose cases
add up past it, so the admin's pages of runs still answer (SQLite stored such a cost and then failed to read
it back; PostgreSQL refused the run)."""

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from toolcalling.evals._outcomes import CaseOutcome, RunSummary
from toolcalling.evals._store import store_run
from toolcalling.models import EvalCaseResult, EvalRun

pytestmark = [pytest.mark.django_db, pytest.mark.database]  # the cost columns' range on each database


def outcome(name, cost):
    return CaseOutcome(name=name, case=name, passed=True, score=1.0, tokens=10, cost=cost)


def test_costs_beyond_the_columns_are_stored_as_unknown(client):
    summary = RunSummary(
        name="big",
        outcomes=[
            outcome("huge", "9999999999.9900000000"),
            outcome("large", "60000000.0000000000"),
            outcome("small", "0.0012340000"),
            outcome("unpriced", None),
        ],
    )
    run = store_run(summary)
    run = EvalRun.objects.get(pk=run.pk)
    assert run.cost is None  # the cases that have a cost add up past the column
    costs = dict(EvalCaseResult.objects.filter(run=run).values_list("case", "cost"))
    assert costs == {"huge": None, "large": Decimal("60000000.000000"), "small": Decimal("0.001234"), "unpriced": None}

    fits = store_run(RunSummary(name="fits", outcomes=[outcome("large", "60000000"), outcome("small", "0.5")]))
    assert EvalRun.objects.get(pk=fits.pk).cost == Decimal("60000000.5")

    client.force_login(get_user_model().objects.create_superuser("root", password="pw"))
    for url in ("/admin/toolcalling/evalrun/", f"/admin/toolcalling/evalrun/{run.pk}/change/"):
        assert client.get(url).status_code == 200, url
    assert client.get(f"/admin/toolcalling/evalrun/compare/{run.pk}/{fits.pk}/").status_code == 200
