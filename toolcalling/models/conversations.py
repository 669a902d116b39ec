"""Conversations and their messages."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from ._money import UNPRICED, cost_field


class Conversation(models.Model):
    """One user's chat with one assistant."""

    class Status(models.TextChoices):
        IDLE = "idle", pgettext_lazy("toolcalling model", "Idle")
        RUNNING = "running", pgettext_lazy("toolcalling model", "Running")
        AWAITING_APPROVAL = "awaiting_approval", pgettext_lazy("toolcalling model", "Awaiting approval")
        FAILED = "failed", pgettext_lazy("toolcalling model", "Failed")

    class Origin(models.TextChoices):
        CHAT = "chat", _("Chat or REST API")
        CODE = "code", pgettext_lazy("toolcalling model", "Python code")
        MCP = "mcp", pgettext_lazy("toolcalling model", "MCP client")

    id = models.UUIDField(
        primary_key=True, default=uuid.uuid4, editable=False, verbose_name=pgettext_lazy("toolcalling model", "id")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="toolcalling_conversations",
        verbose_name=pgettext_lazy("toolcalling model", "user"),
        help_text=_("Who the conversation belongs to; tools act on this user's behalf."),
    )
    assistant_id = models.CharField(
        max_length=100,
        verbose_name=pgettext_lazy("toolcalling model", "assistant"),
        help_text=_("The id of the registered assistant."),
    )
    title = models.CharField(max_length=200, blank=True, verbose_name=pgettext_lazy("toolcalling model", "title"))
    status = models.CharField(
        max_length=20,
        choices=Status.choices,
        default=Status.IDLE,
        verbose_name=pgettext_lazy("toolcalling model", "status"),
        help_text=_("Whether a turn is running, waiting for a staff decision, or failed."),
    )
    error = models.TextField(
        blank=True, verbose_name=pgettext_lazy("toolcalling model", "error"), help_text=_("Why the last turn failed.")
    )
    origin = models.CharField(
        max_length=10,
        choices=Origin.choices,
        default=Origin.CHAT,
        editable=False,
        verbose_name=pgettext_lazy("toolcalling model", "origin"),
        help_text=_(
            "Where the conversation began: the chat page or the REST API, Python code (Assistant.run), "
            "or an MCP client's direct tool call (no model is asked about its results)."
        ),
    )
    turn_token = models.UUIDField(
        null=True,
        blank=True,
        editable=False,
        verbose_name=pgettext_lazy("toolcalling model", "turn token"),
        help_text=_("The claim of the running turn; every write of that turn is conditional on still holding it."),
    )
    stop_requested_at = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        verbose_name=pgettext_lazy("toolcalling model", "stop requested at"),
        help_text=_("When the owner asked the running turn to stop; it stops at its next step, in any process."),
    )
    state = models.JSONField(
        default=dict,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "state"),
        help_text=_("Loop state kept between turns, such as the tools found by tool search."),
    )
    prompt_tokens = models.PositiveBigIntegerField(
        default=0, verbose_name=pgettext_lazy("toolcalling model", "prompt tokens")
    )
    completion_tokens = models.PositiveBigIntegerField(
        default=0, verbose_name=pgettext_lazy("toolcalling model", "completion tokens")
    )
    total_tokens = models.PositiveBigIntegerField(
        default=0, verbose_name=pgettext_lazy("toolcalling model", "total tokens")
    )
    cached_tokens = models.PositiveBigIntegerField(
        default=0,
        verbose_name=pgettext_lazy("toolcalling model", "cached tokens"),
        help_text=_("Prompt tokens the provider read from its prompt cache (part of the prompt tokens)."),
    )
    reasoning_tokens = models.PositiveBigIntegerField(
        default=0,
        verbose_name=pgettext_lazy("toolcalling model", "reasoning tokens"),
        help_text=_("Completion tokens the model spent on reasoning (part of the completion tokens)."),
    )
    cost = cost_field(
        _(
            "What the priced model answers cost, in TOOLCALLING's CURRENCY; empty while none is priced. "
            "Answers without a price are counted in unpriced answers, never as free."
        ),
        null=True,
        blank=True,
    )
    unpriced_replies = models.PositiveIntegerField(
        default=0, verbose_name=pgettext_lazy("toolcalling model", "unpriced answers"), help_text=UNPRICED
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=pgettext_lazy("toolcalling model", "created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=pgettext_lazy("toolcalling model", "updated at"))

    class Meta:
        ordering = ["-updated_at"]
        verbose_name = pgettext_lazy("toolcalling model", "conversation")
        verbose_name_plural = pgettext_lazy("toolcalling model", "conversations")
        indexes = [models.Index(fields=["user", "-updated_at"], name="toolcalling_conv_user_idx")]

    def __str__(self) -> str:
        return self.title or pgettext_lazy("toolcalling model", "%(assistant)s conversation %(id)s") % {
            "assistant": self.assistant_id,
            "id": str(self.id)[:8],
        }


class Message(models.Model):
    """One message of the history sent to the model, in order."""

    class Role(models.TextChoices):
        SYSTEM = "system", pgettext_lazy("toolcalling model", "System")
        USER = "user", pgettext_lazy("toolcalling model", "User")
        ASSISTANT = "assistant", pgettext_lazy("toolcalling model", "Assistant")
        TOOL = "tool", pgettext_lazy("toolcalling model", "Tool")

    id = models.BigAutoField(primary_key=True)
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="messages",
        verbose_name=pgettext_lazy("toolcalling model", "conversation"),
    )
    role = models.CharField(
        max_length=20, choices=Role.choices, verbose_name=pgettext_lazy("toolcalling model", "role")
    )
    content = models.TextField(blank=True, verbose_name=pgettext_lazy("toolcalling model", "content"))
    tool_call_id = models.CharField(
        max_length=100,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "tool call id"),
        help_text=_("On tool messages: the model's id of the call this message answers."),
    )
    is_error = models.BooleanField(
        default=False,
        verbose_name=pgettext_lazy("toolcalling model", "is error"),
        help_text=_("On tool messages: whether the call failed (the model is told so where its API has a flag)."),
    )
    data = models.JSONField(
        null=True,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "data"),
        help_text=_("Structured output parsed from an assistant answer, when an output type was asked for."),
    )
    model = models.CharField(max_length=200, blank=True, verbose_name=pgettext_lazy("toolcalling model", "model"))
    prompt_tokens = models.PositiveIntegerField(
        default=0, verbose_name=pgettext_lazy("toolcalling model", "prompt tokens")
    )
    completion_tokens = models.PositiveIntegerField(
        default=0, verbose_name=pgettext_lazy("toolcalling model", "completion tokens")
    )
    total_tokens = models.PositiveIntegerField(
        default=0, verbose_name=pgettext_lazy("toolcalling model", "total tokens")
    )
    cached_tokens = models.PositiveIntegerField(
        default=0,
        verbose_name=pgettext_lazy("toolcalling model", "cached tokens"),
        help_text=_("Prompt tokens the provider read from its prompt cache (part of the prompt tokens)."),
    )
    reasoning_tokens = models.PositiveIntegerField(
        default=0,
        verbose_name=pgettext_lazy("toolcalling model", "reasoning tokens"),
        help_text=_("Completion tokens the model spent on reasoning (part of the completion tokens)."),
    )
    provider_items = models.JSONField(
        default=list,
        blank=True,
        editable=False,
        verbose_name=pgettext_lazy("toolcalling model", "provider items"),
        help_text=_(
            "On assistant answers: the answer as the model API issued it (Responses output items with their ids, "
            "Anthropic content blocks with their thinking signatures), sent back as it was on later requests."
        ),
    )
    cost = cost_field(
        _("What this model answer cost, in the currency of its price; empty when its model has no price."),
        null=True,
        blank=True,
    )
    price = models.JSONField(
        null=True,
        blank=True,
        editable=False,
        verbose_name=pgettext_lazy("toolcalling model", "price"),
        help_text=_(
            "The rates per million tokens this answer was priced at, with their currency and source, "
            "so a later price change never rewrites its cost."
        ),
    )
    usage_unknown = models.BooleanField(
        default=False,
        verbose_name=pgettext_lazy("toolcalling model", "usage unknown"),
        help_text=_(
            "On model answers: the endpoint reported no usage, or a malformed one; the token counts are then 0 "
            "and mean nothing, and the cost is unknown (empty), never 0."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=pgettext_lazy("toolcalling model", "created at"))

    class Meta:
        ordering = ["conversation", "id"]
        verbose_name = pgettext_lazy("toolcalling model", "message")
        verbose_name_plural = pgettext_lazy("toolcalling model", "messages")
        indexes = [
            # A turn reads the newest messages of its conversation (only the tail, under a memory budget).
            models.Index(fields=["conversation", "id"], name="toolcalling_msg_conv_id_idx"),
        ]
        constraints = [
            # A call is answered at most once, whoever tries to answer it twice.
            models.UniqueConstraint(
                fields=["conversation", "tool_call_id"],
                condition=models.Q(role="tool"),
                name="toolcalling_one_answer_per_call",
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_role_display()}: {self.content[:60]}"

    def has_none(self, *relations: str) -> Message:
        """Mark the ``relations`` of a message just stored (``"tool_calls"``, ``"attachments"``) as having no rows,
        as a prefetch that found none would: reading them later costs no query, nor the compiling of one (an
        unevaluated ``none()`` is compiled each time it is read, to find it empty)."""
        cache = self.__dict__.setdefault("_prefetched_objects_cache", {})
        for name in relations:
            related: Any = self._meta.get_field(name).related_model
            empty = related._default_manager.none()
            empty._result_cache = []  # evaluated, as Django's prefetching leaves the querysets it caches
            empty._prefetch_done = True
            cache[name] = empty
        return self

    @property
    def sent_files(self) -> Any:
        """The attachments a user message carries; none, without a query, on other messages."""
        return self.attachments.all() if self.role == self.Role.USER else []
