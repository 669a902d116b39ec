"""A site's receiver of ``post_save`` for messages and tool calls: ``with listening() as seen`` (what it was told,
in order)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import connections
from django.db.models.signals import post_save

from toolcalling.models import Message, ToolCall


@dataclass(frozen=True)
class Seen:
    model: str
    pk: Any
    created: bool
    update_fields: frozenset[str] | None
    status: str  # a call's status as the receiver saw it; "" for a message
    using: str = field(default="", compare=False)  # the database alias it was written to
    atomic: bool = field(default=False, compare=False)  # whether that alias was inside a transaction then


@contextmanager
def listening() -> Iterator[list[Seen]]:
    """What a site's receiver of ``post_save`` for messages and calls is told, in order."""
    heard: list[Seen] = []

    def receiver(
        sender: type, instance: Any, created: bool, using: str, update_fields: Any = None, **kwargs: Any
    ) -> None:
        fields = frozenset(update_fields) if update_fields is not None else None
        status = getattr(instance, "status", "")
        atomic = connections[using].in_atomic_block
        heard.append(Seen(sender.__name__, instance.pk, created, fields, status, using=using, atomic=atomic))

    post_save.connect(receiver, sender=Message, weak=False, dispatch_uid="test-messages")
    post_save.connect(receiver, sender=ToolCall, weak=False, dispatch_uid="test-calls")
    try:
        yield heard
    finally:
        post_save.disconnect(sender=Message, dispatch_uid="test-messages")
        post_save.disconnect(sender=ToolCall, dispatch_uid="test-calls")


def created(seen: list[Seen], model: str) -> list[Any]:
    return [s.pk for s in seen if s.model == model and s.created]
