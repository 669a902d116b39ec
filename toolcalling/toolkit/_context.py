"""``ToolContext``: what the model must never choose, built by the server and handed to tools."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
    from pydantic import BaseModel

    from ..attachments import AttachedFile
    from ..models import Conversation, ToolCall


class ContextAssistant(Protocol):
    """What a ``ToolContext`` tells of the assistant running the call: who it is and the argument extras its tools
    take. The whole assistant, ``AssistantLike``, offers ``Tool``s, which are built on ``ToolContext``."""

    id: ClassVar[str | None]
    name: ClassVar[str]
    description: ClassVar[str]
    argument_extras: ClassVar[type[BaseModel] | None]


@dataclass(kw_only=True)
class ToolContext:
    """Server-side facts a tool may rely on. Never part of a tool's schema, never filled from model output."""

    user: AbstractBaseUser | AnonymousUser | None
    """The authenticated user the conversation belongs to (for approved calls: the requester, not the approver)."""
    conversation: Conversation | None = None
    """The stored conversation this call belongs to."""
    assistant: ContextAssistant | None = None
    """The assistant instance running the turn."""
    tool_call: ToolCall | None = None
    """The stored call being run (set just before the tool function is called)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """What the site adds through ``Assistant.get_context_extra()``, e.g. a tenant id."""

    @property
    def idempotency_key(self) -> str | None:
        """A key for this call that stays the same on every attempt to run it (a worker that died and a call run
        again, an approver's "run again"), for the tool to pass to an external API that takes one (payment and
        e-mail providers do), so that the second attempt is recognised there. Derived from the call's identity
        (its conversation and the model's call id), never random: a UUID as text. ``None`` outside a call."""
        call = self.tool_call
        if call is None:
            return None
        return idempotency_key(call.conversation_id, call.call_id)

    @property
    def attachments(self) -> list[AttachedFile]:
        """The files the conversation's messages carry, oldest first, each with ``name``, ``content_type``,
        ``size`` and ``open()``; read when asked for, so a tool that never looks costs no query."""
        from ..attachments import conversation_files  # reads models, which ``import toolcalling`` must not load

        return conversation_files(self.conversation)


IDEMPOTENCY_NAMESPACE = uuid.UUID("5c0b6d1e-3f8a-5a7e-9a43-2d1f0e7c6b88")


def idempotency_key(conversation_id: object, call_id: str) -> str:
    """The idempotency key of the call ``call_id`` of a conversation (``ToolContext.idempotency_key``)."""
    return str(uuid.uuid5(IDEMPOTENCY_NAMESPACE, f"{conversation_id}/{call_id}"))


@runtime_checkable
class _HoldsPermissions(Protocol):
    """What Django's permission checks call on a user: ``PermissionsMixin`` and ``AnonymousUser`` have it."""

    def has_perms(self, perm_list: Iterable[str], obj: Any = None) -> bool: ...


def holds_permissions(user: object, permissions: Iterable[str]) -> bool:
    """Whether ``user`` holds every one of ``permissions``. A custom user model without ``has_perms`` (no
    ``PermissionsMixin``) holds none: a tool or server that asks for permissions is then not offered, rather than
    failing the turn with an AttributeError."""
    return isinstance(user, _HoldsPermissions) and user.has_perms(permissions)
