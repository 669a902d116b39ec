"""``ToolContext``: what the model must never choose, built by the server and handed to tools."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    from ..assistant import Assistant
    from ..models import Conversation, ToolCall


@dataclass(kw_only=True)
class ToolContext:
    """Server-side facts a tool may rely on. Never part of a tool's schema, never filled from model output."""

    user: AbstractBaseUser | AnonymousUser | None
    """The authenticated user the conversation belongs to (for approved calls: the requester, not the approver)."""
    conversation: Conversation | None = None
    """The stored conversation this call belongs to."""
    assistant: Assistant | None = None
    """The assistant instance running the turn."""
    tool_call: ToolCall | None = None
    """The stored call being run (set just before the tool function is called)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """What the site adds through ``Assistant.get_context_extra()``, e.g. a tenant id."""


@runtime_checkable
class _HoldsPermissions(Protocol):
    """What Django's permission checks call on a user: ``PermissionsMixin`` and ``AnonymousUser`` have it."""

    def has_perms(self, perm_list: Iterable[str], obj: Any = None) -> bool: ...


def holds_permissions(user: object, permissions: Iterable[str]) -> bool:
    """Whether ``user`` holds every one of ``permissions``. A custom user model without ``has_perms`` (no
    ``PermissionsMixin``) holds none: a tool or server that asks for permissions is then not offered, rather than
    failing the turn with an AttributeError."""
    return isinstance(user, _HoldsPermissions) and user.has_perms(permissions)
