"""What one answer cost at one assistant's prices, and how that adds to a conversation's total: priced answers
add their cost, unpriced ones are counted apart, so an unknown cost is never added as zero."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from django.db.models import DecimalField, F, Value
from django.db.models.expressions import Combinable
from django.db.models.functions import Coalesce, Least

from ._increment import Increment
from ._prices import MAX_COST, Price, price_for

logger = logging.getLogger("toolcalling")


class TokenCounts(Protocol):
    """The counts of one answer (``model_apis.Usage``)."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int


@dataclass(frozen=True)
class Cost:
    """What one answer cost: ``amount`` in ``price.currency``, or ``None`` with no ``price`` (unpriced)."""

    amount: Decimal | None
    price: Price | None


class Pricing:
    """How one assistant's answers are priced: by the model it asks for (``Assistant.get_model()``) at the
    provider its model API names (``Assistant.get_price_provider()``); the model an answer reports comes second
    (a dated snapshot of the same model)."""

    def __init__(self, model: str, provider: str | None) -> None:
        self.model, self.provider = model, provider
        self._found: dict[tuple[str, int], Price | None] = {}  # a turn prices each answer twice: meter, ledger

    def price(self, reported: str = "", prompt_tokens: int = 0) -> Price | None:
        """The price of an answer that reports ``reported`` as its model (``None``: unpriced)."""
        key = (reported, prompt_tokens)
        if key not in self._found:
            models = [self.model, reported] if reported and reported != self.model else [self.model]
            self._found[key] = price_for(models, self.provider, prompt_tokens)
        return self._found[key]

    def cost(self, reported: str, usage: TokenCounts) -> Cost:
        """What an answer with ``usage`` cost; tokens a provider wrote to its cache count where an API reports
        them (``cache_write_tokens``), else every uncached prompt token is priced as input."""
        price = self.price(reported, usage.prompt_tokens)
        if price is None:
            return Cost(None, None)
        amount = price.cost(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                            cached_tokens=usage.cached_tokens,
                            cache_write_tokens=getattr(usage, "cache_write_tokens", 0))  # fmt: skip
        if amount > MAX_COST:  # no cost column could hold it: unknown, as an unpriced answer's, never stored
            logger.error(
                "an answer of %s costs %s %s at the price of %s, more than a cost can hold (%s): it counts as unpriced",
                reported or self.model, amount, price.currency, price.model, MAX_COST,
            )  # fmt: skip
            return Cost(None, None)
        return Cost(amount, price)

    @property
    def priced(self) -> bool:
        """Whether the assistant's own model has a price (answers that report another model may still not)."""
        return self.price() is not None


UNPRICED = Cost(None, None)


MONEY = DecimalField(max_digits=20, decimal_places=10)


def capped(total: Combinable) -> Least:
    """A total of costs as the database computes it, stopped at ``MAX_COST``: a sum of answers that each fit can
    pass what the column holds, and a row holding more could no longer be read (SQLite)."""
    return Least(total, Value(MAX_COST, output_field=MONEY), output_field=MONEY)


def cost_increments(cost: Cost | None) -> dict[str, Any]:
    """The update of a conversation's ``cost`` (or its ``unpriced_replies``) for one more answer."""
    if cost is None:
        return {}
    if cost.amount is None:
        return {"unpriced_replies": Increment("unpriced_replies", 1)}
    total = Coalesce(F("cost"), Value(Decimal(0), output_field=MONEY)) + Value(cost.amount, output_field=MONEY)
    return {"cost": capped(total)}


def add_cost(totals: Any, cost: Cost | None) -> None:
    """The same on the conversation object in memory (``cost_increments`` updated its row)."""
    if cost is None:
        return
    if cost.amount is None:
        totals.unpriced_replies += 1
    else:
        totals.cost = min((totals.cost or Decimal(0)) + cost.amount, MAX_COST)
