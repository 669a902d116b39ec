"""The expiry sweep's part for attachments: uploads no message took within ``UNATTACHED_MAX_AGE`` go."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from ..models import Attachment
from ._storing import attachment_settings


def sweep_unattached(now: datetime | None = None) -> int:
    """Delete the uploads older than ``UNATTACHED_MAX_AGE`` that no message carries (their files go once the
    deletion commits); the number deleted."""
    cutoff = (now or timezone.now()) - timedelta(seconds=attachment_settings()["UNATTACHED_MAX_AGE"])
    deleted, _by_model = Attachment.objects.filter(message__isnull=True, created_at__lt=cutoff).delete()
    return deleted
