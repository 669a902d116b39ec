"""Files users uploaded, and the conversations and messages they joined."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from .conversations import Conversation, Message


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
