"""Approval: deciding on gated tool calls (approve, reject, cancel, expire), running approved calls on a
worker exactly once, and the sweep that keeps them moving. Used by the admin, the API and the tasks."""

from ._arguments import edit_note, tool_for, validate_arguments
from ._decisions import (
    WAITING,
    approve,
    cancel_waiting,
    edit_arguments,
    expire,
    log_decision,
    reject,
    waiting_calls,
)
from ._preview import Preview, preview
from ._rights import APPROVE_PERMISSION, can_approve, check_may_decide, may_decide, refusal
from ._runs import (
    PENDING_STATUSES,
    WORKER_STOPPED,
    continue_when_decided,
    fail_interrupted,
    fail_running,
    run,
    start_run,
)
from ._sweeps import SweepResult, continue_stalled, fail_stalled, sweep

__all__ = [
    "APPROVE_PERMISSION",
    "PENDING_STATUSES",
    "WAITING",
    "WORKER_STOPPED",
    "Preview",
    "SweepResult",
    "approve",
    "can_approve",
    "cancel_waiting",
    "check_may_decide",
    "continue_stalled",
    "continue_when_decided",
    "edit_arguments",
    "edit_note",
    "expire",
    "fail_interrupted",
    "fail_running",
    "fail_stalled",
    "log_decision",
    "may_decide",
    "preview",
    "refusal",
    "reject",
    "run",
    "start_run",
    "sweep",
    "tool_for",
    "validate_arguments",
    "waiting_calls",
]
