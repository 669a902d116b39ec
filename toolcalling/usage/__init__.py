"""Usage limits across turns: the limits a site and its assistants set, the counters every process adds to,
the check before each model call, what answers cost, and the usage shown to users and staff. It knows models
and settings, never turns or HTTP."""

from ._costs import UNPRICED, Cost, Pricing, add_cost, cost_increments
from ._increment import Increment
from ._limits import PERIODS, UsageLimit, parse_limits, site_limits, window
from ._meter import Counts, Meter, exceeded
from ._prices import currency_problem, price_problems
from ._report import current, report

__all__ = [
    "Counts",
    "PERIODS",
    "UNPRICED",
    "Cost",
    "Increment",
    "Meter",
    "Pricing",
    "UsageLimit",
    "add_cost",
    "cost_increments",
    "currency_problem",
    "current",
    "exceeded",
    "parse_limits",
    "price_problems",
    "report",
    "site_limits",
    "window",
]
