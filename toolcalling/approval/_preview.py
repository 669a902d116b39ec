"""A waiting call's preview: what its tool's ``approval_preview`` says about the current state, computed
each time someone who decides looks, so it never shows a stale state. A preview that raises shows its error."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _
from pydantic_core import to_jsonable_python

from ..exceptions import NotRegistered
from ..models import ToolCall
from ..toolkit import assistants

logger = logging.getLogger("toolcalling")


@dataclass(frozen=True, kw_only=True)
class Preview:
    """Text, or JSON data (usually a dict of labelled facts), or the error the preview function raised."""

    value: Any = None
    error: str = ""

    @property
    def is_text(self) -> bool:
        return isinstance(self.value, str)

    @property
    def rows(self) -> list[tuple[str, Any]]:
        """A dict's ``(key, value)`` pairs, for a table (templates cannot call ``.items()`` on a dict with an
        ``"items"`` key); empty for anything else."""
        return list(self.value.items()) if isinstance(self.value, dict) else []

    def as_data(self) -> dict[str, Any]:
        """The API's ``preview``: ``{"value": text or data, "error": ""}``."""
        return {"value": self.value, "error": self.error}

    def as_text(self) -> str:
        """Plain text, for e-mails and chat messages: text as it is, a dict as ``key: value`` lines."""
        if self.error:
            return _("(the preview failed: %(error)s)") % {"error": self.error}
        if isinstance(self.value, dict):
            return "\n".join(f"{key}: {_plain(value)}" for key, value in self.value.items())
        return _plain(self.value)


def preview(call: ToolCall) -> Preview | None:
    """The call's preview now, run as its requester (the context a worker would run it with);
    ``None`` when its tool has no ``approval_preview`` or is no longer registered. Never raises."""
    try:
        assistant = assistants.get(call.conversation.assistant_id)()
        tool = next((t for t in assistant.resolve_tools() if t.name == call.name), None)
    except NotRegistered:
        return None
    if tool is None or tool.approval_preview is None:
        return None
    try:
        ctx = assistant.build_context(call.conversation.user, call.conversation)
        ctx.tool_call = call
        value = tool.approval_preview(ctx, dict(call.arguments))
        return Preview(value=value if isinstance(value, str) else to_jsonable_python(value))
    except Exception as exc:  # a broken preview must never break the page that shows it
        logger.warning("approval preview of %s (call %s) failed", call.name, call.pk, exc_info=True)
        return Preview(error=f"{type(exc).__name__}: {exc}")


def _plain(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value)
    if value is None:
        return "-"
    return str(value)
