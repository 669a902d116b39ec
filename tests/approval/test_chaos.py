"""A short chaos run (bench/chaos.py): a real deployment whose web processes and workers are killed, one web process
stopped as a deploy stops it, and Redis restarted empty, while users talk to it. Any acknowledged message lost, side
effect repeated, conversation or call left stuck, or event stream that could not be resumed with Redis up (a Redis
restarted empty takes the events it held with it) fails."""

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
    # Its deployment is SQLite's whatever the pass's: the pass's database server is not the deployment's.
    for name in (
        "DJANGO_SETTINGS_MODULE",
        "TOOLCALLING_TEST_DATABASE",
        "TOOLCALLING_TEST_API",
        "TOOLCALLING_TEST_SERVER",
    ):
        environment.pop(name, None)
    run = subprocess.run(
        [sys.executable, "bench/chaos.py", "--seconds", "40", "--users", "6", "--database", "sqlite", "--turns", "20",
         "--web-kills", "1", "--worker-kills", "2", "--deploys", "1", "--redis-restarts", "1", "--kill-every", "1.5",
         "--drain", "60", "--seed", "39"],
        cwd=services.ROOT, env=environment, capture_output=True, text=True, timeout=540,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout)
    assert report["turns acknowledged"] >= 20 and report["disruptions not done (the time ran out)"] == 0, report
    assert report["event streams"]["followed"] > 0, report
    for count in (
        "acknowledged messages lost",
        "charges delivered twice (non-idempotent repeated)",
        "conversations still running",
        "conversations still waiting",
        "calls without an outcome",
        "event streams not resumable, Redis up throughout",
    ):
        assert report[count] == 0, (count, report)
