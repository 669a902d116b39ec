"""Ready-made hooks: a per-conversation token budget and structured logging of every step."""

from __future__ import annotations

import logging
import time
import weakref
from typing import TYPE_CHECKING, Any

from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .conf import toolcalling_settings
from .hooks import EndTurn, Hook, ModelRequest, TurnView

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

    from .model_apis import ModelReply
    from .models import Message, ToolCall

logger = logging.getLogger("toolcalling")


class TokenBudget(Hook):
    """End a turn once the conversation has used ``max_tokens`` (its stored total), before the next model call.

    ``TOOLCALLING = {"HOOKS": ["toolcalling.builtin_hooks.TokenBudget"]}`` uses the default budget; for another,
    list an instance: ``hooks = [TokenBudget(20_000)]`` on an assistant.
    """

    message: StrOrPromise = _(
        "This conversation has used its token budget ({used} of {limit} tokens). Please start a new one."
    )

    def __init__(self, max_tokens: int = 100_000, message: str | None = None) -> None:
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"TokenBudget needs a positive number of tokens, not {max_tokens!r}.")
        self.max_tokens = max_tokens
        if message is not None:
            self.message = message

    def before_model_call(self, turn: TurnView, request: ModelRequest) -> None:
        used = turn.conversation.total_tokens
        if used >= self.max_tokens:
            logger.info(
                "token budget reached: %d of %d",
                used,
                self.max_tokens,
                extra={"conversation": str(turn.conversation.pk), "step": "token_budget", "status": "exceeded"},
            )
            raise EndTurn(str(self.message).format(used=used, limit=self.max_tokens))


class StructuredLogging(Hook):
    """Log every step to the ``toolcalling`` logger with fields a log pipeline can index.

    Each record has ``extra`` fields ``conversation``, ``step`` (turn_start, model_call, tool_call, turn_end),
    and where they apply ``tool``, ``duration`` (ms) and ``status``. Arguments and results are added
    (``arguments``, ``result``) only when ``TOOLCALLING["LOG_PAYLOADS"]`` is on.
    """

    def __init__(self, level: int = logging.INFO) -> None:
        self.level = level
        # One hook instance serves every turn (settings HOOKS); timings are kept per turn.
        self._started: weakref.WeakKeyDictionary[TurnView, float] = weakref.WeakKeyDictionary()

    def _log(self, turn: TurnView, step: str, msg: str, *args: Any, **fields: Any) -> None:
        extra = {"conversation": str(turn.conversation.pk), "step": step, "tool": None, "duration": None}
        extra.update(fields)
        extra.setdefault("status", None)
        logger.log(self.level, msg, *args, extra=extra)

    def on_turn_start(self, turn: TurnView) -> None:
        self._log(turn, "turn_start", "turn started (%s)", turn.assistant.id, status="running")

    def before_model_call(self, turn: TurnView, request: ModelRequest) -> None:
        self._started[turn] = time.monotonic()

    def after_model_call(self, turn: TurnView, reply: ModelReply) -> None:
        started = self._started.pop(turn, None)
        duration = round((time.monotonic() - started) * 1000, 1) if started is not None else None
        self._log(
            turn,
            "model_call",
            "model call: %d tool calls, %d tokens",
            len(reply.tool_calls),
            reply.usage.total_tokens,
            duration=duration,
            status=reply.finish_reason or "stop",
            tokens=reply.usage.total_tokens,
        )

    def after_tool_call(self, turn: TurnView, call: ToolCall, result: str) -> None:
        duration = None
        if call.started_at is not None:
            duration = round((timezone.now() - call.started_at).total_seconds() * 1000, 1)
        payload: dict[str, Any] = {}
        if toolcalling_settings.LOG_PAYLOADS:
            payload = {"arguments": call.arguments, "result": result}
        self._log(
            turn, "tool_call", "tool %s: %s", call.name, call.status, tool=call.name, duration=duration,
            status=call.status, **payload,
        )  # fmt: skip
        return None

    def on_turn_end(self, turn: TurnView, messages: list[Message]) -> None:
        status = turn.conversation.status
        self._log(turn, "turn_end", "turn ended: %s (%d messages)", status, len(messages), status=status)
