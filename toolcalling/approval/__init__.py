"""Approval: deciding on gated tool calls (approve, reject, cancel, expire), running approved calls on a
worker exactly once, and the sweep that keeps them moving. Used by the admin, the API and the tasks.

Only what those callers (and the tests) use is named here; the rest stays in the private modules."""

from ._arguments import tool_for, validate_arguments
from ._client_results import answer_client_call, check_client_output
from ._decisions import (
    REASON_MAX_LENGTH,
    SETTLEMENTS,
    approve,
    cancel_waiting,
    edit_arguments,
    expire,
    reject,
    settle,
    text_problem,
    validate_decision,
    waiting_calls,
)
from ._preview import Preview, preview
from ._rights import APPROVE_PERMISSION, can_approve, may_decide, refusal
from ._runs import WORKER_STOPPED, run, start_run
from ._sweeps import SweepResult, continue_stalled, fail_stalled, recover_stalled, resume_stalled, sweep

__all__ = [
    "APPROVE_PERMISSION",
    "REASON_MAX_LENGTH",
    "SETTLEMENTS",
    "WORKER_STOPPED",
    "Preview",
    "SweepResult",
    "answer_client_call",
    "check_client_output",
    "approve",
    "can_approve",
    "cancel_waiting",
    "continue_stalled",
    "edit_arguments",
    "expire",
    "fail_stalled",
    "may_decide",
    "preview",
    "recover_stalled",
    "refusal",
    "reject",
    "resume_stalled",
    "settle",
    "run",
    "start_run",
    "sweep",
    "text_problem",
    "tool_for",
    "validate_arguments",
    "validate_decision",
    "waiting_calls",
]
