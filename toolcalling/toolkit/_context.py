"""``ToolContext``: what the model must never choose, built by the server and handed to tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
