"""The turn throttle, on top of the site's own: posting a message is the one request that spends model tokens
(scope ``toolcalling_turn``), whichever edge it comes through (``PostsMessages`` adds it to a view's POST)."""

from __future__ import annotations

from typing import ClassVar, cast

from rest_framework.settings import api_settings
from rest_framework.throttling import UserRateThrottle

DEFAULT_TURN_RATE = "20/minute"


class TurnRateThrottle(UserRateThrottle):
    """Turns per user (per IP address for anonymous requests), on top of the site's own throttles.

    The rate is ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["toolcalling_turn"]`` when the site sets it
    (``None`` switches the throttle off), else ``DEFAULT_TURN_RATE``. It is read per request, not when
    the class is imported, so changed settings apply at once.
    """

    scope = "toolcalling_turn"
    default_rate: ClassVar[str] = DEFAULT_TURN_RATE

    def get_rate(self) -> str | None:
        # Rates are strings such as "10/minute" (or None); DRF's stubs type them as numbers.
        rates = cast("dict[str, str | None]", api_settings.DEFAULT_THROTTLE_RATES or {})
        return rates[self.scope] if self.scope in rates else self.default_rate
