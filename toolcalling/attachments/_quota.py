"""What one user may keep of uploads no message took yet: ``MAX_UNSENT`` files and ``MAX_UNSENT_BYTES`` bytes, so
a user (or a stolen session) cannot fill the site's storage with files that are kept until they expire."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.db.models import Count, Sum
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from ..exceptions import UploadQuotaExceeded
from ..models import Attachment
from ._storing import attachment_settings, human_size, store


def store_unsent(upload: UploadedFile, user: Any) -> Attachment:
    """Store an upload that waits for a message (``POST attachments/``) if the user's unsent uploads leave room
    for it, else ``UploadQuotaExceeded``. Checked before it reaches storage, and again once its row is written,
    counting the uploads stored up to it: of parallel uploads that would pass together, the later ones are
    deleted again (ties refuse both), so a user never keeps more than the bounds allow."""
    check_room(user, upload.size or 0, extra=1)
    attachment = store(upload, user)
    try:
        check_room(user, 0, up_to=attachment.created_at)
    except UploadQuotaExceeded:
        attachment.delete()  # its file goes once the deletion commits
        raise
    return attachment


def check_room(user: Any, size: int, *, extra: int = 0, up_to: datetime | None = None) -> None:
    """``UploadQuotaExceeded`` unless the user's unsent uploads (those stored up to ``up_to``), with ``extra``
    more files of ``size`` bytes, are within the bounds. Uploads older than ``UNATTACHED_MAX_AGE`` do not
    count: they are as good as gone (``toolcalling_expire`` deletes them)."""
    limits = attachment_settings()
    cutoff = timezone.now() - timedelta(seconds=limits["UNATTACHED_MAX_AGE"])
    unsent = Attachment.objects.filter(user=user, message__isnull=True, created_at__gte=cutoff)
    if up_to is not None:
        unsent = unsent.filter(created_at__lte=up_to)
    held = unsent.aggregate(files=Count("pk"), bytes=Sum("size"))
    if held["files"] + extra > limits["MAX_UNSENT"]:
        limit = limits["MAX_UNSENT"]
        raise UploadQuotaExceeded(
            ngettext(
                "You may keep at most %(limit)d file uploaded but not sent yet. Send it with a message first.",
                "You may keep at most %(limit)d files uploaded but not sent yet. Send them with a message first.",
                limit,
            )
            % {"limit": limit}
        )
    if (held["bytes"] or 0) + size > limits["MAX_UNSENT_BYTES"]:
        raise UploadQuotaExceeded(
            _("Your files uploaded but not sent yet may add up to at most %(size)s. Send them with a message first.")
            % {"size": human_size(limits["MAX_UNSENT_BYTES"])}
        )
