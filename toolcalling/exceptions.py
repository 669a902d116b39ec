"""Every exception the app raises, in one place.

Developer mistakes (``ImproperlyDefined``) and registry states come first. The errors a request can
meet (``APIError`` and its subclasses) carry a stable ``code`` (``default_code``), a ``detail`` and the ``status``
after them, and nothing of HTTP: the engine and approval raise them, a task or a command catches them, and the
edges' HTTP layer gives each code its HTTP status (one table, ``toolcalling.web.HTTP_STATUS``) and turns the
error into the one error body, ``{"detail": ..., "code": ..., "status": ...}``. A 500 is only ever a bug.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

if TYPE_CHECKING:
    from .models import Message


class ToolcallingError(Exception):
    """Base class of every error this app raises."""


# Developer mistakes and registry states -----------------------------------------------------------


class ImproperlyDefined(ToolcallingError):
    """A tool or assistant is defined wrongly; the message lists every problem at once."""


class AlreadyRegistered(ToolcallingError):
    """A tool or assistant with this name is registered already."""


class NotRegistered(ToolcallingError):
    """No tool or assistant is registered under this name."""


class InvalidArguments(ToolcallingError, ValueError):
    """Arguments do not fit a tool's signature; the message is written for the model (and approvers)."""


# Errors a request can meet --------------------------------------------------------------------------


class APIError(ToolcallingError):
    """An error with a place in the API: its ``code`` (the class's ``default_code``), its ``detail`` (the class's
    ``default_detail`` unless given), and the conversation's (or, for decisions, the call's) ``status`` after it,
    which the error body reports. Its HTTP status is the edges' to give (``toolcalling.web.HTTP_STATUS``)."""

    default_code = "error"
    default_detail: Any = _("The request could not be completed.")

    def __init__(self, detail: Any = None, *, status: str | None = None) -> None:
        # Translated now, in the language of the request (or task) that meets the error.
        self.detail = str(self.default_detail if detail is None else detail)
        super().__init__(self.detail)
        self.status = status

    @property
    def code(self) -> str:
        return self.default_code


class ConversationBusy(APIError):
    """The conversation is running a turn or waiting for approval and cannot take a new message."""

    default_code = "conversation_busy"
    default_detail = _("The conversation is busy with another message. Try again when it has answered.")


class NothingWaiting(APIError):
    """Cancel was asked for, but no call of the conversation waits for a decision."""

    default_code = "nothing_waiting"
    default_detail = _("No tool call of this conversation is waiting for approval.")


class AssistantUnavailable(APIError):
    """The conversation's assistant is no longer registered, so it cannot take a message."""

    default_code = "assistant_unavailable"
    default_detail = _("The assistant of this conversation no longer exists.")


class NotRunning(APIError):
    """Stop was asked for, but no turn of the conversation is running."""

    default_code = "not_running"
    default_detail = _("No turn of this conversation is running.")


class AlreadyDecided(APIError):
    """The tool call is no longer waiting for a decision (another approver, the user or expiry came first)."""

    default_code = "already_decided"
    default_detail = _("This tool call was already decided.")


class DecisionNotAllowed(APIError):
    """This user may not decide on this tool call: staff decide it and they are not an approver, or the
    conversation's own user confirms it and they are someone else (staff included)."""

    default_code = "permission_denied"
    default_detail = _("You may not decide on this tool call.")


class RequesterMayNotApprove(DecisionNotAllowed):
    """Four eyes: a staff member may not approve a call from their own conversation
    (unless ``APPROVER_MAY_BE_REQUESTER`` is True); they may still reject it."""

    default_code = "requester_may_not_approve"
    default_detail = _("You asked for this call yourself, so another staff member has to approve it.")


class TaskQueueUnavailable(APIError):
    """The Celery broker could not be reached, so nothing was started; nothing was lost either."""

    default_code = "queue_unavailable"
    default_detail = _("The task queue could not be reached; nothing was started. Try again.")


class DatabaseUnavailable(APIError):
    """The database could not be reached (its server restarting, a connection cut or refused), so the request was
    not carried out and a message sent with it was not stored: the client may send it again. ``wait`` is how many
    seconds to wait first (the ``Retry-After`` header)."""

    default_code = "database_unavailable"
    default_detail = _(
        "The database cannot be reached just now, so your request was not taken (a message sent with it was not "
        "stored). Try again in a moment."
    )
    wait = 5


class EventsUnavailable(APIError):
    """The event store (``EVENTS_REDIS_URL``) could not be reached, so a conversation's events cannot be read."""

    default_code = "events_unavailable"
    default_detail = _("The event stream cannot be reached just now; the history has everything. Try again.")


class TurnError(APIError):
    """A turn ended with an error; the conversation is marked ``failed`` and can take a new message.

    ``messages`` are the messages the turn stored before it failed (the API returns them too)."""

    default_code = "turn_failed"
    default_detail = pgettext_lazy("toolcalling", "The turn failed.")

    def __init__(self, detail: Any = None, *, status: str | None = None) -> None:
        super().__init__(detail, status=status)
        self.messages: list[Message] = []


class ModelError(TurnError):
    """The model endpoint failed (timeout, connection error, 5xx, 429, rejected request) or answered
    something that is not a valid completion."""

    default_code = "model_error"
    default_detail = _("The model endpoint failed.")


class TurnInterrupted(TurnError):
    """The turn lost its claim on the conversation: it was deleted, or another turn took it over after the
    turn went quiet for ``STALE_TURN_TIMEOUT``. The turn stops without writing anything more."""

    default_code = "turn_interrupted"
    default_detail = _("The turn stopped: the conversation was deleted or another turn took it over.")


class TurnNotStored(TurnError):
    """A write of the turn failed in the database (a deadlock retried until it gave up, a value out of the
    column's range, the database gone): the turn ended ``failed``, without repeating the write that failed."""

    default_code = "turn_not_stored"
    default_detail = _("The turn could not be stored and ended failed. Try again.")


class ModelCallLimitExceeded(TurnError):
    """The model was asked ``MAX_MODEL_CALLS`` times in one turn without giving a final answer."""

    default_code = "model_call_limit_exceeded"


class UsageLimitExceeded(TurnError):
    """A usage limit (``USAGE_LIMITS``, an assistant's ``usage_limits``) is reached for its period.

    A new message is refused before it is stored; a turn that reaches the limit before its next model call
    ends with this error. ``wait`` is the number of seconds until the period ends (the ``Retry-After``
    header) and ``limit`` describes the limit that was hit (the error body's ``limit``)."""

    default_code = "usage_limit_exceeded"
    default_detail = _("A usage limit is reached. Try again when it resets.")

    def __init__(
        self,
        detail: Any = None,
        *,
        status: str | None = None,
        wait: int | None = None,
        limit: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status)
        self.wait = wait
        self.limit: dict[str, Any] = limit or {}


class UnpricedModel(TurnError):
    """A cost limit applies to the turn, but its assistant's model has no price (``TOOLCALLING["PRICES"]``,
    genai-prices): its usage could not be counted against the limit, so the turn is refused before anything is
    stored, never counted as free. System check E008 names such assistants."""

    default_code = "unpriced_model"
    default_detail = _("This assistant's model has no price, and a cost limit applies.")


class ToolExecutionError(TurnError):
    """A tool failed while ``TOOL_ERRORS`` is ``"raise"``."""

    default_code = "tool_error"


class ToolCallLimitExceeded(TurnError):
    """A per-tool or total tool call limit was exceeded while ``ON_LIMIT_EXCEEDED`` is ``"raise"``."""

    default_code = "tool_call_limit_exceeded"


class OutputValidationError(TurnError):
    """The model's final answer did not fit the output type, even after the allowed retries."""

    default_code = "output_validation_failed"


# Frontends --------------------------------------------------------------------------------------------


class AGUINotInstalled(APIError):
    """``POST ag-ui/`` was used without the ``ag-ui-protocol`` package; it comes with
    ``pip install 'django-toolcalling[ag-ui]'``."""

    default_code = "ag_ui_not_installed"
    default_detail = _("AG-UI needs the ag-ui-protocol package: pip install 'django-toolcalling[ag-ui]'.")


# Attachments ----------------------------------------------------------------------------------------


class UnsupportedAttachment(APIError):
    """An upload whose bytes are none of the allowed types (``ATTACHMENTS["TYPES"]``), whatever its name or
    declared type says: an SVG, an HTML page, a renamed executable. Refused before anything is stored."""

    default_code = "unsupported_attachment"
    default_detail = _("This kind of file cannot be attached. Attach an image (PNG, JPEG, GIF, WebP) or a PDF.")


class RequestTooLarge(APIError):
    """A body over the site's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (or with more fields or files than Django's limits
    allow): Django refuses to read it, and the API says so in its own shape, not with the site's HTML 400 page."""

    default_code = "request_too_large"
    default_detail = _("The request is larger than this site accepts.")


class AttachmentTooLarge(APIError):
    """An upload larger than ``ATTACHMENTS["MAX_BYTES"]``, refused while it is read, before it reaches storage."""

    default_code = "attachment_too_large"
    default_detail = _("The file is too large to attach.")


class UploadQuotaExceeded(APIError):
    """An upload beyond what one user may keep of files no message took yet (``ATTACHMENTS["MAX_UNSENT"]`` files,
    ``["MAX_UNSENT_BYTES"]`` bytes): nothing of it is kept. Sending the others with a message makes room."""

    default_code = "upload_quota_exceeded"
    default_detail = _("You have uploaded too many files that were not sent yet. Send them with a message first.")


class TooManyAttachments(APIError):
    """A message carries more attachments than ``ATTACHMENTS["MAX_PER_MESSAGE"]``."""

    default_code = "too_many_attachments"
    default_detail = _("The message carries too many attachments.")


class UnknownAttachment(APIError):
    """A message names an attachment that is not one of the user's own uploads not yet sent with a message
    (another user's, a deleted one, or one already sent): nothing of the message is stored."""

    default_code = "unknown_attachment"
    default_detail = _("An attachment of this message does not exist or is not yours to send.")


# MCP --------------------------------------------------------------------------------------------------


class MCPNotInstalled(APIError):
    """MCP was used without the official ``mcp`` package; it comes with ``pip install 'django-toolcalling[mcp]'``."""

    default_code = "mcp_not_installed"
    default_detail = _("MCP needs the mcp package: pip install 'django-toolcalling[mcp]'.")


class MCPServerError(ToolcallingError):
    """An MCP server could not be reached, did not answer in time, or answered with a protocol error.

    Raised while a remote tool runs, so the model reads it as the tool's result and the turn goes on."""


class MCPToolError(ToolcallingError):
    """An MCP server's tool answered with an error result (``isError``); the model reads its text."""
