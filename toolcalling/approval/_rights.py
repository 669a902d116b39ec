"""Who may decide on gated tool calls."""

from __future__ import annotations

from typing import Any

APPROVE_PERMISSION = "toolcalling.approve_toolcall"


def can_approve(user: Any) -> bool:
    """Whether ``user`` may approve or reject tool calls (the ``toolcalling.approve_toolcall`` permission)."""
    return bool(user and user.is_authenticated and user.has_perm(APPROVE_PERMISSION))
