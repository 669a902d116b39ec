"""DRF permissions: who may decide on tool calls."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from ..approval import APPROVE_PERMISSION, can_approve


class CanApproveToolCalls(BasePermission):
    """Only users with ``toolcalling.approve_toolcall`` may approve or reject calls."""

    message = f"You need the permission {APPROVE_PERMISSION} to decide on tool calls."

    def has_permission(self, request: Request, view: Any) -> bool:
        return can_approve(request.user)
