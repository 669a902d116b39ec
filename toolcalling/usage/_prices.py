"""What a model answer cost: the price per million tokens of its model (``TOOLCALLING["PRICES"]``, else the
genai-prices database) applied to its token counts, in ``Decimal``, never ``float``."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from ..conf import toolcalling_settings

PRICE_KEYS = ("input", "cached_input", "output", "cache_write")
REQUIRED_KEYS = ("input", "output")
# Costs are kept to 10 decimal places of the currency: a token at 0.0001 per million is still counted.
COST_PLACES = Decimal("1E-10")
# The most a cost column (``Decimal(20, 10)``, models/_money.py) holds on every database: SQLite keeps a decimal
# as a float read back to 15 significant digits, so 9,999,999,999.9999999999 would come back as 10^10, which does
# not fit and fails every read of its row. No cost above it is written: an answer costing more is unpriced, a
# total stops at it, and system check E007 refuses a rate above it.
MAX_COST = Decimal("9999999999.99")
MILLION = Decimal(1_000_000)
DATABASE_CURRENCY = "USD"  # genai-prices' prices are in US dollars


@dataclass(frozen=True, kw_only=True)
class Price:
    """Rates per million tokens in ``currency``, as stored with each message they priced."""

    input: Decimal
    output: Decimal
    cached_input: Decimal
    """Prompt tokens read from the provider's cache (default: ``input``)."""
    cache_write: Decimal
    """Prompt tokens written to the provider's cache, where an API reports them (default: ``input``)."""
    currency: str
    source: str
    """``"settings"`` (``TOOLCALLING["PRICES"]``) or ``"genai-prices"``."""
    model: str
    """The model the rates are for, as the source names it."""

    def cost(
        self, *, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0, cache_write_tokens: int = 0
    ) -> Decimal:
        """What the counts cost. Cached and cache-written tokens are part of ``prompt_tokens`` and are priced at
        their own rates; reasoning tokens are part of ``completion_tokens`` and priced as output."""
        uncached = max(0, prompt_tokens - cached_tokens - cache_write_tokens)
        total = (
            uncached * self.input
            + cached_tokens * self.cached_input
            + cache_write_tokens * self.cache_write
            + completion_tokens * self.output
        )
        return (total / MILLION).quantize(COST_PLACES, rounding=ROUND_HALF_UP)

    def as_json(self) -> dict[str, str]:
        """The price as stored with a message: rates as decimal strings, so a later change never rewrites it."""
        rates = {key: str(getattr(self, key)) for key in PRICE_KEYS}
        return {**rates, "currency": self.currency, "source": self.source, "model": self.model}


def price_problems(prices: Any) -> list[str]:
    """What is wrong with a ``PRICES`` dict, every problem at once (empty: nothing)."""
    if not isinstance(prices, dict):
        return [f'PRICES must be a dict such as {{"gpt-4o": {{"input": "2.50", "output": "10.00"}}}}, not {prices!r}']
    problems = []
    for model, rates in prices.items():
        if not isinstance(model, str) or not model:
            problems.append(f"{model!r}: a model name is a non-empty string")
            continue
        if not isinstance(rates, dict):
            problems.append(f'{model!r}: the rates are a dict such as {{"input": "2.50", "output": "10.00"}}')
            continue
        unknown = sorted(set(rates) - set(PRICE_KEYS), key=str)
        if unknown:
            known = ", ".join(PRICE_KEYS)
            problems.append(f"{model!r}: unknown key(s) {', '.join(map(repr, unknown))}; known: {known}")
        missing = [key for key in REQUIRED_KEYS if key not in rates]
        if missing:
            problems.append(f"{model!r}: {' and '.join(map(repr, missing))} must be given")
        for key in PRICE_KEYS:
            if key not in rates:
                continue
            rate = _rate(rates[key])
            if rate is None:
                problems.append(
                    f"{model!r}: {key!r} must be a non-negative number per million tokens as a string or Decimal "
                    f"(never a float, which cannot hold every price exactly), not {rates[key]!r}"
                )
            elif rate > MAX_COST:
                problems.append(
                    f"{model!r}: {key!r} must be at most {MAX_COST} per million tokens (what a cost can hold), "
                    f"not {rates[key]!r}"
                )
    return problems


def currency_problem(currency: Any) -> str | None:
    if isinstance(currency, str) and re.fullmatch(r"[A-Z]{3}", currency):
        return None
    return f"CURRENCY must be a three-letter ISO 4217 code such as 'USD' or 'EUR', not {currency!r}"


def _rate(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        return None
    try:
        rate = Decimal(value)
    except InvalidOperation:
        return None
    return rate if rate.is_finite() and rate >= 0 else None


def configured_prices() -> dict[str, Price]:
    """``TOOLCALLING["PRICES"]`` as ``Price`` objects, built once per settings (the system check E007 reports
    mistakes)."""

    def build() -> dict[str, Price]:
        s = toolcalling_settings
        problems = [*price_problems(s.PRICES), *filter(None, [currency_problem(s.CURRENCY)])]
        if problems:
            raise ImproperlyConfigured('TOOLCALLING["PRICES"] cannot be used: ' + "; ".join(problems) + ".")
        built = {}
        for model, rates in s.PRICES.items():
            found = {key: Decimal(value) for key, value in rates.items()}
            built[model] = Price(input=found["input"], output=found["output"],
                                 cached_input=found.get("cached_input", found["input"]),
                                 cache_write=found.get("cache_write", found["input"]),
                                 currency=s.CURRENCY, source="settings", model=model)  # fmt: skip
        return built

    return toolcalling_settings.derived("prices", build)


def database_price(model: str, provider: str | None, prompt_tokens: int) -> Price | None:
    """The model's price in genai-prices, at the provider the site's endpoint is: the provider whose API URL
    ``BASE_URL`` is, or, without ``BASE_URL``, ``provider``: the one the model API names as its SDK's default
    (``ModelAPI.price_provider``: OpenAI; Anthropic). An
    endpoint genai-prices does not know (a local server, a proxy, ``CLIENT_FACTORY``, the offline model) has no
    price there: its prices are the site's to set. Tiered prices take the tier of ``prompt_tokens``."""
    s = toolcalling_settings
    if not model or s.CURRENCY != DATABASE_CURRENCY or s.CLIENT_FACTORY or s.OFFLINE_MODEL:
        return None
    from genai_prices import data_snapshot

    where: dict[str, Any] = {"provider_id": None, "provider_api_url": None}
    if s.BASE_URL:
        where["provider_api_url"] = s.BASE_URL
    else:
        where["provider_id"] = provider
    try:
        seller, found = data_snapshot.get_snapshot().find_provider_model(model, None, **where)
    except LookupError:
        return None
    rates = found.get_prices(datetime.datetime.now(tz=datetime.UTC))
    input_rate, output_rate = _tier(rates.input_mtok, prompt_tokens), _tier(rates.output_mtok, prompt_tokens)
    if input_rate is None or output_rate is None:
        return None  # priced per request or per second, not per token: not a model this app can price
    cached = _tier(rates.cache_read_mtok, prompt_tokens)
    written = _tier(rates.cache_write_mtok, prompt_tokens)
    return Price(input=input_rate, output=output_rate,
                 cached_input=input_rate if cached is None else cached,
                 cache_write=input_rate if written is None else written,
                 currency=DATABASE_CURRENCY, source="genai-prices", model=f"{seller.id}/{found.id}")  # fmt: skip


def _tier(rate: Any, prompt_tokens: int) -> Decimal | None:
    """A flat rate, or the rate of the tier ``prompt_tokens`` falls in (a tier applies to all tokens above
    its start, as genai-prices computes it)."""
    if rate is None or isinstance(rate, Decimal):
        return rate
    applicable = rate.base
    for tier in reversed(rate.tiers):
        if prompt_tokens > tier.start:
            return Decimal(tier.price)
    return Decimal(applicable)


def price_for(models: list[str], provider: str | None, prompt_tokens: int = 0) -> Price | None:
    """The price of an answer by the first of ``models`` that has one: ``PRICES`` first for every name, then
    genai-prices (at ``provider`` without ``BASE_URL``: see ``database_price``); ``None`` (unpriced) when neither
    knows any of them."""
    configured = configured_prices()
    for model in models:
        if model in configured:
            return configured[model]
    for model in models:
        price = database_price(model, provider, prompt_tokens)
        if price is not None:
            return price
    return None
