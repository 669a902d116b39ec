"""Conversations, their messages and the tool calls the model asked for, stored in the site's database."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

# Money: up to 10 digits before the point, and 10 after it (a token at 0.0001 per million tokens still counts).
COST_DIGITS, COST_DECIMAL_PLACES = 20, 10
UNPRICED = _("Model answers whose model has no known price: their cost is not in the cost.")


def cost_field(help_text: Any, **options: Any) -> models.DecimalField:
    """A cost in money, exact (``Decimal``)."""
    return models.DecimalField(
        max_digits=COST_DIGITS,
        decimal_places=COST_DECIMAL_PLACES,
        verbose_name=pgettext_lazy("toolcalling model", "cost"),
        help_text=help_text,
        **options,
    )


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
    reasoning = models.JSONField(
        default=list,
        blank=True,
        editable=False,
        verbose_name=pgettext_lazy("toolcalling model", "reasoning items"),
        help_text=_(
            "On assistant answers: the provider's opaque reasoning items (encrypted), sent back with the answer "
            "on later requests of APIs that need them (the Responses API)."
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

    @property
    def sent_files(self) -> Any:
        """The attachments a user message carries; none, without a query, on other messages."""
        return self.attachments.all() if self.role == self.Role.USER else []


class ToolCall(models.Model):
    """A call the model asked for, with its arguments, its decision (when gated) and its outcome."""

    class Status(models.TextChoices):
        AWAITING_APPROVAL = "awaiting_approval", pgettext_lazy("toolcalling model", "Awaiting approval")
        APPROVED = "approved", pgettext_lazy("toolcalling model", "Approved")
        REJECTED = "rejected", pgettext_lazy("toolcalling model", "Rejected")
        RUNNING = "running", pgettext_lazy("toolcalling model", "Running")
        SUCCEEDED = "succeeded", pgettext_lazy("toolcalling model", "Succeeded")
        FAILED = "failed", pgettext_lazy("toolcalling model", "Failed")
        CANCELLED = "cancelled", pgettext_lazy("toolcalling model", "Cancelled")
        EXPIRED = "expired", pgettext_lazy("toolcalling model", "Expired")

    class Approver(models.TextChoices):
        STAFF = "staff", pgettext_lazy("toolcalling model", "A staff member")
        USER = "user", pgettext_lazy("toolcalling model", "The user")

    id = models.BigAutoField(primary_key=True)
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="tool_calls",
        verbose_name=pgettext_lazy("toolcalling model", "conversation"),
    )
    message = models.ForeignKey(
        Message,
        on_delete=models.CASCADE,
        related_name="tool_calls",
        verbose_name=pgettext_lazy("toolcalling model", "message"),
        help_text=_("The assistant message that asked for this call."),
    )
    index = models.PositiveSmallIntegerField(
        default=0,
        verbose_name=pgettext_lazy("toolcalling model", "index"),
        help_text=_("Position among the calls of one answer."),
    )
    call_id = models.CharField(
        max_length=100,
        verbose_name=pgettext_lazy("toolcalling model", "call id"),
        help_text=pgettext_lazy("toolcalling model", "The model's id."),
    )
    name = models.CharField(
        max_length=64,
        verbose_name=pgettext_lazy("toolcalling model", "name"),
        help_text=pgettext_lazy("toolcalling model", "The tool's name."),
    )
    arguments = models.JSONField(
        default=dict,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "arguments"),
        help_text=_("The arguments as the model sent them (or as an approver edited them)."),
    )
    raw_arguments = models.TextField(
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "raw arguments"),
        help_text=_("The model's argument text, kept verbatim."),
    )
    original_arguments = models.JSONField(
        null=True,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "original arguments"),
        help_text=_("The arguments as the model sent them, kept when an approver edited them; empty otherwise."),
    )
    extras = models.JSONField(
        default=dict,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "extras"),
        help_text=_("Extra fields the assistant asked the model to fill, removed before the tool ran."),
    )
    status = models.CharField(
        max_length=20,
        choices=Status.choices,
        verbose_name=pgettext_lazy("toolcalling model", "status"),
        help_text=_("Where the call stands."),
    )
    result = models.TextField(
        blank=True, verbose_name=pgettext_lazy("toolcalling model", "result"), help_text=_("What the model was told.")
    )
    error = models.TextField(blank=True, verbose_name=pgettext_lazy("toolcalling model", "error"))
    requires_approval = models.BooleanField(
        default=False, verbose_name=pgettext_lazy("toolcalling model", "requires approval")
    )
    approver = models.CharField(
        max_length=10,
        choices=Approver.choices,
        default=Approver.STAFF,
        verbose_name=pgettext_lazy("toolcalling model", "approver"),
        help_text=_("Who decides a gated call: a staff member, or the conversation's own user."),
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=pgettext_lazy("toolcalling model", "decided by"),
    )
    decided_at = models.DateTimeField(
        null=True, blank=True, verbose_name=pgettext_lazy("toolcalling model", "decided at")
    )
    decision_reason = models.TextField(blank=True, verbose_name=pgettext_lazy("toolcalling model", "decision reason"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=pgettext_lazy("toolcalling model", "created at"))
    started_at = models.DateTimeField(
        null=True, blank=True, verbose_name=pgettext_lazy("toolcalling model", "started at")
    )
    lease_expires_at = models.DateTimeField(
        null=True,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "lease expires at"),
        help_text=_("An approved call runs under a lease: a redelivered task leaves it alone until the lease ends."),
    )
    finished_at = models.DateTimeField(
        null=True, blank=True, verbose_name=pgettext_lazy("toolcalling model", "finished at")
    )
    duration_ms = models.PositiveIntegerField(
        null=True, blank=True, verbose_name=pgettext_lazy("toolcalling model", "duration (ms)")
    )

    class Meta:
        ordering = ["message_id", "index"]
        verbose_name = pgettext_lazy("toolcalling model", "tool call")
        verbose_name_plural = pgettext_lazy("toolcalling model", "tool calls")
        permissions = [("approve_toolcall", _("Can approve or reject tool calls"))]
        constraints = [
            # Call ids are made unique within a conversation when a reply is stored (see engine storage).
            models.UniqueConstraint(fields=["conversation", "call_id"], name="toolcalling_call_id_unique")
        ]
        indexes = [
            models.Index(fields=["status", "created_at"], name="toolcalling_call_status_idx"),
            models.Index(fields=["name", "status"], name="toolcalling_call_name_idx"),
            # The calls of a stretch of a conversation's messages, in order (a turn's history).
            models.Index(fields=["conversation", "message", "index"], name="toolcalling_call_conv_msg_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_status_display()})"

    def as_openai(self) -> dict[str, Any]:
        """This call as it appears in an assistant message sent to the model."""
        return {
            "id": self.call_id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.raw_arguments or "{}"},
        }


# The built-in scopes of usage limits as staff read them ("user 7", "the site"); a site-defined scope keeps its name.
USAGE_SCOPE_LABELS = {
    "user": pgettext_lazy("toolcalling usage scope", "user"),
    "assistant": pgettext_lazy("toolcalling usage scope", "assistant"),
    "site": pgettext_lazy("toolcalling usage scope", "site"),
}


class UsageCounter(models.Model):
    """What one scope (a user, an assistant, the site, a tenant) used in one calendar period: the rows usage
    limits are checked against. Turns add to them with ``F()`` increments, so every process counts into one row."""

    class Period(models.TextChoices):
        HOUR = "hour", pgettext_lazy("toolcalling model", "Hour")
        DAY = "day", pgettext_lazy("toolcalling model", "Day")
        MONTH = "month", pgettext_lazy("toolcalling model", "Month")

    id = models.BigAutoField(primary_key=True)
    scope = models.CharField(
        max_length=200,
        verbose_name=pgettext_lazy("toolcalling model", "scope"),
        help_text=_("user, assistant, site, or the name of a site-defined scope such as a tenant."),
    )
    key = models.CharField(
        max_length=200,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "key"),
        help_text=_("Who in the scope: the user's id, the assistant's id, the tenant's key; empty for the site."),
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=pgettext_lazy("toolcalling model", "user"),
        help_text=_("The user, on rows of the user scope."),
    )
    period = models.CharField(
        max_length=10, choices=Period.choices, verbose_name=pgettext_lazy("toolcalling model", "period")
    )
    period_start = models.DateTimeField(
        verbose_name=pgettext_lazy("toolcalling model", "period start"),
        help_text=_("The start of the calendar period, in the site's time zone."),
    )
    tokens = models.PositiveBigIntegerField(default=0, verbose_name=pgettext_lazy("toolcalling model", "tokens"))
    turns = models.PositiveBigIntegerField(default=0, verbose_name=pgettext_lazy("toolcalling model", "turns"))
    tool_calls = models.PositiveBigIntegerField(
        default=0, verbose_name=pgettext_lazy("toolcalling model", "tool calls")
    )
    cost = cost_field(_("What the priced model answers cost, in TOOLCALLING's CURRENCY."), default=0)
    unpriced_replies = models.PositiveBigIntegerField(
        default=0, verbose_name=pgettext_lazy("toolcalling model", "unpriced answers"), help_text=UNPRICED
    )
    updated_at = models.DateTimeField(
        null=True, blank=True, verbose_name=pgettext_lazy("toolcalling model", "updated at")
    )

    class Meta:
        verbose_name = pgettext_lazy("toolcalling model", "usage counter")
        verbose_name_plural = pgettext_lazy("toolcalling model", "usage counters")
        ordering = ["-period_start", "-tokens"]
        constraints = [
            models.UniqueConstraint(fields=["scope", "key", "period", "period_start"], name="toolcalling_usage_unique")
        ]
        indexes = [models.Index(fields=["period", "period_start", "scope"], name="toolcalling_usage_period_idx")]

    def __str__(self) -> str:
        scope = USAGE_SCOPE_LABELS.get(self.scope, self.scope)
        who = f"{scope} {self.key}" if self.key else str(scope)
        return _("%(who)s: %(period)s from %(start)s") % {
            "who": who,
            "period": self.get_period_display(),
            "start": f"{self.period_start:%Y-%m-%d %H:%M}",
        }


class EvalRun(models.Model):
    """One run of ``manage.py toolcalling_eval``: its dataset, model and pass rate; its cases are rows of
    ``EvalCaseResult``. The cases' own conversations were rolled back; these rows are what is left of them."""

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(
        max_length=200,
        verbose_name=pgettext_lazy("toolcalling model", "name"),
        help_text=pgettext_lazy("toolcalling model", "The dataset's name."),
    )
    dataset = models.CharField(
        max_length=500,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "dataset"),
        help_text=_("The file or dotted path it was read from."),
    )
    assistant_id = models.CharField(
        max_length=100,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "assistant"),
        help_text=_("The --assistant given, if any."),
    )
    model = models.CharField(
        max_length=200,
        blank=True,
        verbose_name=pgettext_lazy("toolcalling model", "model"),
        help_text=_("The --model given, if any."),
    )
    cases = models.PositiveIntegerField(default=0, verbose_name=pgettext_lazy("toolcalling model", "case runs"))
    passed = models.PositiveIntegerField(default=0, verbose_name=pgettext_lazy("toolcalling model", "passed"))
    pass_rate = models.FloatField(default=0.0, verbose_name=pgettext_lazy("toolcalling model", "pass rate"))
    tokens = models.PositiveBigIntegerField(default=0, verbose_name=pgettext_lazy("toolcalling model", "tokens"))
    cost = models.DecimalField(
        max_digits=14, decimal_places=6, null=True, blank=True, verbose_name=pgettext_lazy("toolcalling model", "cost"),
        help_text=_("The cases' cost, when the site prices its model."),
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=pgettext_lazy("toolcalling model", "created at"))

    class Meta:
        verbose_name = pgettext_lazy("toolcalling model", "eval run")
        verbose_name_plural = pgettext_lazy("toolcalling model", "eval runs")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return _("%(name)s #%(id)s: %(passed)s/%(cases)s passed") % {
            "name": self.name,
            "id": self.pk,
            "passed": self.passed,
            "cases": self.cases,
        }


class EvalCaseResult(models.Model):
    """One case run of an eval run: passed or not, its score, the tools it called and why it failed."""

    id = models.BigAutoField(primary_key=True)
    run = models.ForeignKey(
        EvalRun,
        on_delete=models.CASCADE,
        related_name="results",
        verbose_name=pgettext_lazy("toolcalling model", "eval run"),
    )
    name = models.CharField(
        max_length=300,
        verbose_name=pgettext_lazy("toolcalling model", "name"),
        help_text=_("The case run, e.g. 'status [2/3]'."),
    )
    case = models.CharField(max_length=300, verbose_name=pgettext_lazy("toolcalling model", "case"))
    passed = models.BooleanField(default=False, verbose_name=pgettext_lazy("toolcalling model", "passed"))
    score = models.FloatField(default=0.0, verbose_name=pgettext_lazy("toolcalling model", "score"))
    tool_calls = models.JSONField(
        default=list, blank=True, verbose_name=pgettext_lazy("toolcalling model", "tool calls")
    )
    tokens = models.PositiveBigIntegerField(default=0, verbose_name=pgettext_lazy("toolcalling model", "tokens"))
    cost = models.DecimalField(
        max_digits=14, decimal_places=6, null=True, blank=True, verbose_name=pgettext_lazy("toolcalling model", "cost")
    )
    seconds = models.FloatField(default=0.0, verbose_name=pgettext_lazy("toolcalling model", "seconds"))
    failures = models.JSONField(default=list, blank=True, verbose_name=pgettext_lazy("toolcalling model", "failures"))
    reply = models.TextField(blank=True, verbose_name=pgettext_lazy("toolcalling model", "answer"))

    class Meta:
        verbose_name = pgettext_lazy("toolcalling model", "eval case result")
        verbose_name_plural = pgettext_lazy("toolcalling model", "eval case results")
        ordering = ["run", "id"]
        indexes = [models.Index(fields=["run", "case"], name="toolcalling_evalcase_idx")]

    def __str__(self) -> str:
        return self.name


class Attachment(models.Model):
    """A file a user uploaded (an image or a PDF), kept in the site's storage under a generated name; it joins a
    conversation when a message of its owner's carries it, and is deleted from storage with its row."""

    id = models.UUIDField(
        primary_key=True, default=uuid.uuid4, editable=False, verbose_name=pgettext_lazy("toolcalling model", "id")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="toolcalling_attachments",
        verbose_name=pgettext_lazy("toolcalling model", "user"),
        help_text=_("Who uploaded it; only they (and staff who may view the conversation) can read it."),
    )
    conversation = models.ForeignKey(
        Conversation,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="attachments",
        verbose_name=pgettext_lazy("toolcalling model", "conversation"),
    )
    message = models.ForeignKey(
        Message,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="attachments",
        verbose_name=pgettext_lazy("toolcalling model", "message"),
        help_text=_("The user message that carries it; empty until a message does."),
    )
    storage_name = models.CharField(
        max_length=255,
        editable=False,
        verbose_name=pgettext_lazy("toolcalling attachment", "storage name"),
        help_text=_("The generated name in the attachments' storage; never the user's file name."),
    )
    name = models.CharField(
        max_length=255,
        verbose_name=pgettext_lazy("toolcalling attachment", "name"),
        help_text=_("The user's file name, only shown."),
    )
    content_type = models.CharField(
        max_length=100,
        verbose_name=pgettext_lazy("toolcalling attachment", "content type"),
        help_text=_("What its bytes are, read from the bytes."),
    )
    size = models.PositiveBigIntegerField(
        verbose_name=pgettext_lazy("toolcalling attachment", "size"),
        help_text=pgettext_lazy("toolcalling attachment size", "In bytes."),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=pgettext_lazy("toolcalling model", "created at"))

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name = pgettext_lazy("toolcalling model", "attachment")
        verbose_name_plural = pgettext_lazy("toolcalling model", "attachments")
        indexes = [
            # A message's attachments in order, and the expiry sweep's uploads no message took, oldest first.
            models.Index(fields=["message", "created_at"], name="toolcalling_attach_msg_idx"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_image(self) -> bool:
        return self.content_type.startswith("image/")
