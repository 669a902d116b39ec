"""A large, realistic tool set (100 tools of a shop back office) for tool search tests and the benchmark."""

from __future__ import annotations

import inspect
from typing import Annotated, Any

from pydantic import Field

from toolcalling.toolkit import Tool
from toolcalling.toolkit._tool import make_tool

NOUNS = {
    "order": "a customer's order (items, totals, payment and shipping state)",
    "invoice": "an invoice sent to a business customer, with its VAT lines and due date",
    "customer": "a customer account with contact details, addresses and marketing consent",
    "product": "a product in the catalogue with its price, stock level and variants",
    "shipment": "a parcel handed to a carrier, with tracking number and delivery estimate",
    "refund": "money paid back to a customer for a returned or faulty item",
    "coupon": "a discount code with its percentage, validity period and usage limit",
    "review": "a customer's product review with rating and moderation state",
    "warehouse": "a storage location with its bins, capacity and opening hours",
    "supplier": "a vendor the shop buys products from, with lead times and contracts",
}
VERBS = {
    "get": "Look up one {noun} by its id and return all of its details: {what}.",
    "list": "List the {noun}s that match optional filters, newest first, for browsing {what}.",
    "create": "Create a new {noun} from the given fields; use for {what}.",
    "update": "Change fields of an existing {noun}; only the given fields change. Concerns {what}.",
    "cancel": "Cancel a {noun} that is still open, with a reason that is stored for audit. Concerns {what}.",
    "search": "Full-text search over {noun}s by keywords, returning the best matches among {what}.",
    "export": "Export {noun}s in a date range as a CSV file for accounting or analysis of {what}.",
    "archive": "Archive an old {noun} so it no longer shows in lists but stays stored: {what}.",
    "count": "Count the {noun}s that match optional filters, e.g. for dashboards about {what}.",
    "notify": "Send an e-mail about a {noun} to the people concerned with {what}.",
}


def _make(verb: str, noun: str) -> Tool:
    name = f"{verb}_{noun}" if verb in ("get", "create", "update", "cancel", "archive", "notify") else f"{verb}_{noun}s"
    params = [
        inspect.Parameter(
            f"{noun}_id" if verb not in ("list", "search", "export", "count", "create") else "query",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[str, Field(description=f"The {noun} id, or keywords that identify {noun}s.")],
        ),
        inspect.Parameter(
            "note",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[str | None, Field(description="An optional note stored with the action.")],
        ),
    ]

    def impl(**kwargs: Any) -> dict[str, Any]:
        return {"tool": name, "ok": True, **kwargs}

    impl.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    impl.__annotations__ = {p.name: p.annotation for p in params}
    impl.__name__ = impl.__qualname__ = name
    impl.__doc__ = VERBS[verb].format(noun=noun, what=NOUNS[noun])
    return make_tool(impl, name=name)


CATALOG: list[Tool] = [_make(verb, noun) for noun in NOUNS for verb in VERBS]
