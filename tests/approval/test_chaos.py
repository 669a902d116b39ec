"""A short chaos run (bench/chaos.py): a real deployment whose web processes and workers are killed at random while
users talk to it. Any acknowledged message lost, side effect repeated, or conversation or call left stuck fails."""

import json
import os
import subprocess
import sys

import pytest

from tests import services


# Once, in the full pass: the deployment it starts runs on SQLite whatever the pass's database (the PostgreSQL run
# is bench/chaos.py's own, docs/benchmarks.md).
@pytest.mark.once
@pytest.mark.timeout(600)
def test_a_short_chaos_run_loses_nothing_repeats_nothing_and_leaves_nothing_stuck(tmp_path):
    environment = {**os.environ, "TOOLCALLING_TEST_VAR": str(tmp_path)}
    environment.pop("DJANGO_SETTINGS_MODULE", None)
    run = subprocess.run(
        [sys.executable, "bench/chaos.py", "--seconds", "25", "--users", "4", "--database", "sqlite",
         "--kill-every", "1.5", "--drain", "60", "--seed", "39"],
        cwd=services.ROOT, env=environment, capture_output=True, text=True, timeout=540,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout)
    assert report["turns acknowledged"] > 20 and sum(report["kills"].values()) >= 3, report
    for count in (
        "acknowledged messages lost",
        "charges delivered twice (non-idempotent repeated)",
        "conversations still running",
        "conversations still waiting",
        "calls without an outcome",
    ):
        assert report[count] == 0, (count, report)
