"""The database passes of ``make test`` (``-m database``, tests/passes.py) keep every test that can depend on the
database, by the rules' facts read from a real collection: its group, its fixtures, its ``django_db`` marker; they
leave out what cannot (packaging, the docs, schemathesis); and the tests that replay a history across an approval, a
stop or a structured-output retry run on every model API in them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import passes
from tests.conftest import APIS

ROOT = Path(__file__).resolve().parents[2]

# A history sent back to the model after an approval, a stop or a structured-output retry: stored, then read back
# from the database in each API's own shape.
REPLAYS = [
    "tests/approval/test_decisions.py::test_approve_runs_the_call_as_the_requester_and_the_model_answers",
    "tests/approval/test_decisions.py::test_reject_tells_the_model_the_reason_and_the_conversation_goes_on",
    "tests/approval/test_worker.py::test_approved_call_runs_on_the_worker_as_the_requester_and_the_user_sees_the_answer",
    "tests/approval/test_worker.py::test_calls_finishing_together_continue_the_conversation_once",
    "tests/frontends/test_ai_sdk_approval.py::test_the_user_confirms_their_own_call_through_the_sdk",
    "tests/frontends/test_ai_sdk_approval.py::test_the_user_declines_with_a_reason_the_model_is_told",
    "tests/frontends/test_ag_ui.py::test_a_run_resumed_with_the_users_answer_decides_their_call",
    "tests/limits/test_stop.py::test_stop_ends_a_plain_turn_after_the_running_tool",
    "tests/limits/test_stop.py::test_stop_during_a_streamed_model_call_answers_its_calls_without_running_them",
    "tests/limits/test_stop.py::test_a_stepper_honours_a_stop_between_its_steps",
    "tests/limits/test_stop.py::test_a_continuation_after_approval_honours_a_stop",
    "tests/loop_features/test_structured.py::test_an_invalid_answer_is_sent_back_with_the_errors_and_kept_out_of_the_stored_history",
    "tests/loop_features/test_structured.py::test_after_the_last_retry_the_turn_fails_with_a_clear_error",
    "tests/loop_features/test_structured.py::test_the_api_reports_a_validation_failure",
]


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """What ``pytest -m database`` keeps and leaves out of the whole suite, test by test."""
    out = tmp_path_factory.mktemp("passes") / "collected.jsonl"
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "database", "-p", "tests.passes"]
    env = {**os.environ, "TOOLCALLING_TEST_COLLECTED": str(out)}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


pytestmark = [pytest.mark.once, pytest.mark.timeout(300)]


def test_the_database_passes_keep_exactly_the_tests_marked_database(collected):
    kept = [t["id"] for t in collected if t["kept"]]
    assert kept and all(t["database"] == t["kept"] for t in collected), "the marker is set before -m selects"
    assert 0 < len(kept) < len(collected)


def test_every_test_that_commits_or_reaches_the_database_from_elsewhere_is_kept(collected):
    """Real transactions, a live server, a worker: ``transactional_db`` or a fixture like it, or ``django_db`` with
    ``transaction=True`` or another connection than ``default``."""
    missed = [
        t["id"]
        for t in collected
        if not t["once"]
        and not t["kept"]
        and (
            {"transactional_db", "live_server", "asgi_live_server"} & set(t["fixtures"])
            or t["transaction"]
            or t["databases"] not in (None, ["default"])
        )
    ]
    assert missed == []


def test_every_test_of_the_database_groups_is_kept(collected):
    groups = {t["group"] for t in collected}
    assert {"approval", "streaming", "races", "limits", "integrity"} <= groups
    missed = [t["id"] for t in collected if t["group"] in passes.GROUPS and not t["kept"] and not t["once"]]
    assert missed == []
    # Only what says once itself is left out of them (a deployment of its own, on SQLite whatever the pass).
    assert [t["id"] for t in collected if t["group"] in passes.GROUPS and t["once"]] == [
        "tests/approval/test_chaos.py::test_a_short_chaos_run_loses_nothing_repeats_nothing_and_leaves_nothing_stuck"
    ]


def test_what_cannot_depend_on_the_database_runs_in_the_full_pass_only(collected):
    once = [t for t in collected if t["once"] or t["group"] in passes.ONCE_GROUPS]
    ids = [t["id"] for t in once]
    assert any("test_schemathesis" in i for i in ids) and any(i.startswith("tests/packaging/") for i in ids)
    assert any(i.startswith("tests/docs/") for i in ids)
    assert [t["id"] for t in once if t["kept"]] == []


@pytest.mark.parametrize("name", REPLAYS, ids=[name.rsplit("::", 1)[1] for name in REPLAYS])
def test_a_history_replayed_across_an_approval_a_stop_or_a_retry_runs_on_every_api_in_every_pass(collected, name):
    runs = [t for t in collected if t["id"] == name or t["id"].startswith(name + "[")]
    assert runs, f"{name} is gone: update REPLAYS"
    assert {t["api"] for t in runs} == set(APIS), "marked each_api"
    assert all(t["kept"] for t in runs), "in the database passes"
