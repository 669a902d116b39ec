"""Approval: deciding on gated tool calls (approve, reject, cancel, expire), running approved calls on a
worker exactly once, and the sweep that keeps them moving. Used by the admin, the API and the tasks.

Only what those callers use is named here; the rest stays in the private modules."""

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
from ._runs import run
from ._sweeps import sweep

__all__ = [
    "APPROVE_PERMISSION",
    "REASON_MAX_LENGTH",
    "SETTLEMENTS",
    "Preview",
    "answer_client_call",
    "check_client_output",
    "approve",
    "can_approve",
    "cancel_waiting",
    "edit_arguments",
    "expire",
    "may_decide",
    "preview",
    "refusal",
    "reject",
    "settle",
    "run",
    "sweep",
    "text_problem",
    "tool_for",
    "validate_arguments",
    "validate_decision",
    "waiting_calls",
]
