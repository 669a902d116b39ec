"""Usage limits across turns: the limits a site and its assistants set, the counters every process adds to,
the check before each model call, what answers cost, and the usage shown to users and staff. It knows models
and settings, never turns or HTTP."""

from ._costs import UNPRICED, Cost, Pricing, add_cost, cost_increments
from ._increment import Increment
from ._limits import PERIODS, QUANTITIES, SCOPES, UsageLimit, parse_limits, site_limits, window
from ._meter import ALWAYS_COUNTED, Counts, Meter, exceeded, read_counters, scope_key
from ._prices import Price, configured_prices, currency_problem, price_for, price_problems
from ._report import SHOWN_PERIODS, current, report

__all__ = [
    "Counts",
    "ALWAYS_COUNTED",
    "PERIODS",
    "QUANTITIES",
    "SCOPES",
    "SHOWN_PERIODS",
    "UNPRICED",
    "Cost",
    "Increment",
    "Meter",
    "Price",
    "Pricing",
    "UsageLimit",
    "add_cost",
    "configured_prices",
    "cost_increments",
    "currency_problem",
    "current",
    "exceeded",
    "parse_limits",
    "price_for",
    "price_problems",
    "read_counters",
    "report",
    "scope_key",
    "site_limits",
    "window",
]
