"""Exceptions: developer mistakes, registry states, and the ones that end a turn."""

from __future__ import annotations


class ToolcallingError(Exception):
    """Base class of every error this app raises."""


class ImproperlyDefined(ToolcallingError):
    """A tool or assistant is defined wrongly; the message lists every problem at once."""


class AlreadyRegistered(ToolcallingError):
    """A tool or assistant with this name is registered already."""


class NotRegistered(ToolcallingError):
    """No tool or assistant is registered under this name."""


class TurnError(ToolcallingError):
    """A turn ended with an error; the conversation is marked ``failed`` and can take a new message."""

    code = "turn_failed"


class ModelError(TurnError):
    """The model endpoint failed (timeout, connection error, 5xx, 429, rejected request)."""

    code = "model_error"


class ToolExecutionError(TurnError):
    """A tool failed while ``TOOL_ERRORS`` is ``"raise"``."""

    code = "tool_error"


class ToolCallLimitExceeded(TurnError):
    """A per-tool or total tool call limit was exceeded while ``ON_LIMIT_EXCEEDED`` is ``"raise"``."""

    code = "tool_call_limit_exceeded"


class ConversationBusy(ToolcallingError):
    """The conversation is running a turn or waiting for approval and cannot take a new message."""


class AlreadyDecided(ToolcallingError):
    """The tool call is no longer waiting for a decision (another approver, the user or expiry came first)."""

    def __init__(self, message: str, *, status: str) -> None:
        super().__init__(message)
        self.status = status


class TaskQueueUnavailable(ToolcallingError):
    """The Celery broker could not be reached, so nothing was started; nothing was lost either."""
