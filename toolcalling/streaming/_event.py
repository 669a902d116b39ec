"""An event of a conversation's stream, and what a store of events offers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, kw_only=True)
class Event:
    """One event of a conversation: ``seq`` orders it within the conversation."""

    seq: int
    type: str
    data: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "type": self.type, **self.data}


class Backend(Protocol):
    def publish(self, conversation_id: str, type: str, data: dict[str, Any]) -> Event: ...

    def read(self, conversation_id: str, after: int, timeout: float) -> list[Event]: ...

    async def aread(self, conversation_id: str, after: int, timeout: float) -> list[Event]: ...

    def last_seq(self, conversation_id: str) -> int: ...
