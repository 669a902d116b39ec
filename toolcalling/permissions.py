"""DRF permissions: who may decide on tool calls."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

APPROVE_PERMISSION = "toolcalling.approve_toolcall"


def can_approve(user: Any) -> bool:
    return bool(user and user.is_authenticated and user.has_perm(APPROVE_PERMISSION))


class CanApproveToolCalls(BasePermission):
    """Only users with ``toolcalling.approve_toolcall`` may approve or reject calls."""

    message = "You need the permission toolcalling.approve_toolcall to decide on tool calls."

    def has_permission(self, request: Request, view: Any) -> bool:
        return can_approve(request.user)
