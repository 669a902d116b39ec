"""A pydantic-evals report read as one row per case run (passed, score, calls, tokens, time), with pass rates
per case when cases ran more than once."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic_evals.reporting import EvaluationReport

from ._cases import Transcript


@dataclass(kw_only=True)
class CaseOutcome:
    """One run of one case."""

    name: str
    """The run's name (``case [2/3]`` when repeated)."""
    case: str
    """The case's own name."""
    passed: bool
    score: float
    """The share of the case's assertions that held (0 when the case could not run)."""
    tool_calls: list[str] = field(default_factory=list)
    tokens: int = 0
    cost: str | None = None
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    """Each failed assertion as ``name: reason``, or the error that kept the case from running."""
    reply: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(kw_only=True)
class RunSummary:
    """All case runs of one eval, with the pass rate of each case."""

    name: str
    outcomes: list[CaseOutcome]

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    @property
    def pass_rate(self) -> float:
        return self.passed / len(self.outcomes) if self.outcomes else 0.0

    @property
    def all_passed(self) -> bool:
        return bool(self.outcomes) and all(o.passed for o in self.outcomes)

    def case_pass_rates(self) -> dict[str, tuple[int, int]]:
        """``{case: (runs passed, runs)}`` in the order the cases were run."""
        rates: dict[str, tuple[int, int]] = {}
        for outcome in self.outcomes:
            passed, runs = rates.get(outcome.case, (0, 0))
            rates[outcome.case] = (passed + outcome.passed, runs + 1)
        return rates

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "runs": len(self.outcomes),
            "passed": self.passed,
            "pass_rate": round(self.pass_rate, 4),
            "cases": {case: {"passed": p, "runs": r} for case, (p, r) in self.case_pass_rates().items()},
            "outcomes": [o.as_dict() for o in self.outcomes],
        }


def summarise(report: EvaluationReport[Any, Transcript, Any]) -> RunSummary:
    """One ``CaseOutcome`` per case run of ``report``: the runs that finished, then those whose task raised."""
    outcomes = []
    for case in report.cases:
        results = list(case.assertions.values())
        failures = [f"{r.name}: {r.reason or 'failed'}" for r in results if not r.value]
        failures += [f"{f.name}: {f.error_message}" for f in case.evaluator_failures]
        checks = len(results) + len(case.evaluator_failures)
        held = sum(bool(r.value) for r in results)
        out: Transcript = case.output
        outcomes.append(
            CaseOutcome(
                name=case.name,
                case=case.source_case_name or case.name,
                passed=not failures,
                score=held / checks if checks else 1.0,
                tool_calls=[call.name for call in out.tool_calls],
                tokens=out.total_tokens,
                cost=out.cost,
                seconds=round(case.task_duration, 3),
                failures=failures,
                reply=out.reply,
            )
        )
    for failure in report.failures:
        outcomes.append(
            CaseOutcome(
                name=failure.name,
                case=failure.source_case_name or failure.name,
                passed=False,
                score=0.0,
                failures=[f"error: {failure.error_message}"],
            )
        )
    return RunSummary(name=report.name, outcomes=outcomes)
