"""Usage limits across turns: the limits a site and its assistants set, the counters every process adds to,
the check before each model call, and the usage shown to users and staff. It knows models and settings, never
turns or HTTP."""

from ._limits import PERIODS, QUANTITIES, SCOPES, UsageLimit, parse_limits, site_limits, window
from ._meter import ALWAYS_COUNTED, Meter, Usage, exceeded, read_counters, scope_key
from ._report import SHOWN_PERIODS, current, report

__all__ = [
    "ALWAYS_COUNTED",
    "PERIODS",
    "QUANTITIES",
    "SCOPES",
    "SHOWN_PERIODS",
    "Meter",
    "Usage",
    "UsageLimit",
    "current",
    "exceeded",
    "parse_limits",
    "read_counters",
    "report",
    "scope_key",
    "site_limits",
    "window",
]
