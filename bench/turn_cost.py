"""What each turn of the cost budget costs now, against its budget: the counts ``tests/core/test_turn_budget.py``
holds, printed so a change can be looked at before it is committed.

Not a timing: the SQL statements and the function calls (Python's and the built-in ones) of one turn, after an
identical turn has warmed the process up, the same on every machine for the same code. It runs the budget test
itself (the scenarios and the counting are the test's), on the database and model API given, which starts the
private database server that pass needs, and prints the REST API test's ratio of the POST to ``Assistant.run``:

    .venv/bin/python bench/turn_cost.py                                          # SQLite, Chat Completions
    .venv/bin/python bench/turn_cost.py --database postgresql --api responses
    .venv/bin/python bench/turn_cost.py --database mariadb --api anthropic
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST = "tests/core/test_turn_budget.py"


def change(count: int, budget: int | None) -> str:
    if budget is None:
        return "no budget"
    return f"{(count - budget) / budget:+.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--database", choices=["sqlite", "postgresql", "mariadb"], default="sqlite")
    parser.add_argument("--api", choices=["chat_completions", "responses", "anthropic"], default="chat_completions")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolcalling-turn-cost-") as tmp:
        out = Path(tmp) / "counts.jsonl"
        env = {
            **{key: value for key, value in os.environ.items() if key != "TOOLCALLING_RECORD_BUDGET"},  # look only
            "TOOLCALLING_TEST_DATABASE": options.database,
            "TOOLCALLING_TEST_API": options.api,
            "TOOLCALLING_BUDGET_OUT": str(out),
        }
        command = [sys.executable, "-m", "pytest", TEST, "-k", "stays_within or rest_api", "-p", "no:randomly", "-q",
                   "--tb=line"]  # fmt: skip
        test = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        counts = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    if not counts:
        sys.exit(f"the budget test measured nothing:\n{test.stdout}{test.stderr}")
    # The file of this interpreter's and Django's line, as the test chose it (turn_budget.json for 3.11 + 5.2).
    budget_file = Path(next(row["budgets"] for row in counts if "budgets" in row))
    budgets = json.loads(budget_file.read_text())["budgets"]
    print(f"One turn's cost on {options.database} + {options.api} (budgets: {budget_file.relative_to(ROOT)})")
    print(f"{'turn':<20}{'statements':>11}{'budget':>8}{'change':>10}{'calls':>9}{'budget':>8}{'change':>10}")
    side_by_side = ("run_in_conversation", "posted_turn_beside_it")  # the REST API test's two counts
    beside = {row["scenario"]: row for row in counts if row["scenario"] in side_by_side}
    counts = [row for row in counts if row["scenario"] not in beside]
    for row in counts:
        budget = budgets.get(row["scenario"], {}).get(options.database, {}).get(options.api, {})
        statements, calls = budget.get("statements"), budget.get("python_calls")
        print(
            f"{row['scenario']:<20}{row['statements']:>11}{statements or '-':>8}"
            f"{change(row['statements'], statements):>10}{row['python_calls']:>9}{calls or '-':>8}"
            f"{change(row['python_calls'], calls):>10}"
        )
    if len(beside) == 2:
        run, posted = beside["run_in_conversation"], beside["posted_turn_beside_it"]
        print(
            f"the REST API's POST against Assistant.run's same turn, counted in one run: {posted['python_calls']} /"
            f" {run['python_calls']} calls = {posted['python_calls'] / run['python_calls']:.3f}x (at most 1.3x)"
        )
    verdict = test.stdout.strip().splitlines()[-1] if test.stdout.strip() else ""
    print(f"the budget test: {verdict}")
    failures = [line.split("AssertionError: ", 1)[1] for line in test.stdout.splitlines() if "AssertionError: " in line]
    for failure in dict.fromkeys(failures):  # pytest's summary repeats each
        print(f"  {failure}")


if __name__ == "__main__":
    main()
