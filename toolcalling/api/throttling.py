"""The upload throttle, on top of the site's own: uploading a file fills the site's storage (scope
``toolcalling_upload``). Posting a message has the turn throttle every edge shares (``toolcalling.web``)."""

from __future__ import annotations

from ..web import TurnRateThrottle

DEFAULT_UPLOAD_RATE = "30/minute"


class UploadRateThrottle(TurnRateThrottle):
    """Uploads per user (``POST attachments/``): ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["toolcalling_upload"]``
    when the site sets it (``None``: off), else ``DEFAULT_UPLOAD_RATE``, enough for a few messages' worth of
    files a minute. What a user may keep unsent at once is ``ATTACHMENTS["MAX_UNSENT"]`` and
    ``["MAX_UNSENT_BYTES"]``."""

    scope = "toolcalling_upload"
    default_rate = DEFAULT_UPLOAD_RATE
