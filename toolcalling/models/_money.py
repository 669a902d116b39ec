"""Costs in money, as every model that carries one stores them."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

# Money: up to 10 digits before the point, and 10 after it (a token at 0.0001 per million tokens still counts).
# Nothing larger than ``usage``'s ``MAX_COST`` (9,999,999,999.99) is written: a value that does not fit is refused
# by PostgreSQL and MariaDB, and stored by SQLite, which then fails every read of its row.
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
