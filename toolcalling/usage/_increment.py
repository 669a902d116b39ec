"""``Increment``: a column plus a whole number, in an ``update()``, as the database adds it at the write."""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Expression
from django.db.models.sql.compiler import SQLCompiler


class Increment(Expression):
    """``update(tokens=Increment("tokens", 12))``: the row's ``tokens`` plus 12, added by the database when the row
    is written, as ``F("tokens") + 12`` is, so that writers at the same time add up.

    The same SQL as ``F() + n`` (``(column + %s)``), without what makes that expression cost: ``F() + n`` is
    copied and resolved against the query twice per update (a column, a value, their combined type), some 200
    calls, and a turn adds to a dozen totals and counters. This one has nothing to resolve: it names a column of
    the updated table, which an ``UPDATE`` of one table may name unqualified. For whole numbers only: a decimal
    needs the casts Django adds for SQLite (``F()`` there)."""

    contains_aggregate = False
    contains_over_clause = False

    def __init__(self, column: str, amount: int) -> None:
        super().__init__()
        if not isinstance(amount, int) or isinstance(amount, bool):
            raise TypeError(f"Increment adds a whole number, not {amount!r}.")
        self.column = column
        self.amount = amount

    def __repr__(self) -> str:
        return f"Increment({self.column!r}, {self.amount!r})"

    def resolve_expression(self, *args: Any, **kwargs: Any) -> Increment:
        return self  # nothing in it refers to the query: a column name and a number

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, list[Any]]:  # type: ignore[override]
        return f"({connection.ops.quote_name(self.column)} + %s)", [self.amount]
