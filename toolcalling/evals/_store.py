"""Storing an eval run and its case results, so the admin can show and compare runs."""

from __future__ import annotations

from decimal import Decimal

from django.db import transaction

from ..models import EvalCaseResult, EvalRun
from ..storage import write_db
from ._outcomes import RunSummary

# The most the runs' cost columns (``Decimal(14, 6)``) hold on every database, a conversation's cost may be larger:
# SQLite keeps a decimal as a float read back to 15 significant digits, so stay clear of the last digit.
MAX_COST = Decimal("99999999.99")


def storable(cost: Decimal | None) -> Decimal | None:
    """``cost`` if a run's cost column holds it, else ``None`` (unknown): a row holding more could not be read."""
    return cost if cost is not None and cost <= MAX_COST else None


def store_run(summary: RunSummary, *, dataset: str = "", assistant_id: str = "", model: str = "") -> EvalRun:
    """Save ``summary`` as an ``EvalRun`` with one ``EvalCaseResult`` per case run; a cost too large to store is
    stored as unknown, as the run's total is when its cases' costs add up past what it holds."""
    costs = [Decimal(o.cost) for o in summary.outcomes if o.cost is not None]
    with transaction.atomic(using=write_db()):
        run = EvalRun.objects.create(
            name=summary.name[:200],
            dataset=dataset[:500],
            assistant_id=assistant_id[:100],
            model=model[:200],
            cases=len(summary.outcomes),
            passed=summary.passed,
            pass_rate=summary.pass_rate,
            tokens=sum(o.tokens for o in summary.outcomes),
            cost=storable(sum(costs, Decimal(0))) if costs else None,
        )
        EvalCaseResult.objects.bulk_create(
            EvalCaseResult(
                run=run,
                name=o.name[:300],
                case=o.case[:300],
                passed=o.passed,
                score=o.score,
                tool_calls=o.tool_calls,
                tokens=o.tokens,
                cost=None if o.cost is None else storable(Decimal(o.cost)),
                seconds=o.seconds,
                failures=o.failures,
                reply=o.reply,
            )
            for o in summary.outcomes
        )
    return run
