"""The tool calls the model asked for: their arguments, results and approvals."""

from __future__ import annotations

import os
import socket
from typing import Any

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from .conversations import Conversation, Message


def this_process() -> str:
    """Who runs a call, as the desk shows it when that process died: the host's name and the process id (read
    each time: a worker's pool forks after start-up). A new call's default: a turn runs the calls it stores."""
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


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
        OUTCOME_UNKNOWN = "outcome_unknown", pgettext_lazy("toolcalling model", "Outcome unknown")

    class Approver(models.TextChoices):
        STAFF = "staff", pgettext_lazy("toolcalling model", "A staff member")
        USER = "user", pgettext_lazy("toolcalling model", "The user")
        CLIENT = "client", pgettext_lazy("toolcalling model", "The user's browser")

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
        help_text=_(
            "Who decides a gated call: a staff member, or the conversation's own user; or, for a client tool's "
            "call, the user's browser, which runs it and sends its result."
        ),
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
    worker = models.CharField(
        max_length=200,
        blank=True,
        default=this_process,
        verbose_name=pgettext_lazy("toolcalling model", "worker"),
        help_text=_("The process that ran the call, or was to run it: host name and process id."),
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
