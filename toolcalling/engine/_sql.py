"""The statements on a turn's hot path, as plain SQL built once from the models' own fields.

The ORM compiles every query anew (lookups, joins, expressions), and on a three-request turn that cost
more time than the turn's HTTP requests. The few statements a turn repeats — the fenced update of its
conversation, inserting messages and calls, answering a call, reading the history — are built here from
``_meta``, cached by their shape, and every value goes through its field's own ``get_db_prep_save``, so
they stay as portable as the ORM's. Everything else (the admin, the API, approvals) uses the ORM.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Field, Model

_cache = threading.local()

# Fields whose get_db_prep_save gives back a str or an int unchanged, on every backend Django ships: their
# values skip it. Everything else (dates, JSON, UUIDs, keys to UUIDs) still goes through its field.
_PLAIN = {
    "CharField": str,
    "TextField": str,
    "IntegerField": int,
    "BigIntegerField": int,
    "SmallIntegerField": int,
    "PositiveIntegerField": int,
    "PositiveBigIntegerField": int,
    "PositiveSmallIntegerField": int,
    "AutoField": int,
    "BigAutoField": int,
}


def _sql(key: tuple[Any, ...], build: Any) -> str:
    statements = getattr(_cache, "statements", None)
    if statements is None or getattr(_cache, "vendor", None) != connection.vendor:
        statements = _cache.statements = {}
        _cache.vendor = connection.vendor
    if key not in statements:
        statements[key] = build()
    return statements[key]


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _plain_type(field: Field) -> type | None:
    """``str`` or ``int`` when the field stores such values unchanged (a key: as its target field does)."""
    target = field.target_field if field.is_relation else field
    return _PLAIN.get(target.get_internal_type())


def _prep_value(field: Field, plain: type | None, value: Any, db: Any) -> Any:
    if value is None or type(value) is plain:
        return value
    if field.is_relation and isinstance(value, Model):
        value = value.pk  # a related object is stored as its key, as the ORM does
    return field.get_db_prep_save(value, db)


@functools.cache
def _field(model: type[Model], name: str) -> tuple[Field, type | None]:
    """A model's field by name, with its plain type (see ``_PLAIN``): looked up once per process."""
    field = model._meta.get_field(name)
    return field, _plain_type(field)


def _prep(model: type[Model], name: str, value: Any, db: Any = None) -> Any:
    field, plain = _field(model, name)
    return _prep_value(field, plain, value, db or connections[DEFAULT_DB_ALIAS])


def update(
    model: type[Model],
    *,
    where: dict[str, Any],
    set: dict[str, Any] | None = None,
    add: dict[str, int] | None = None,
    where_in: tuple[str, Sequence[Any]] | None = None,
) -> int:
    """``UPDATE ... SET field = value, counter = counter + n WHERE field = value [AND field IN (...)]``; rows."""
    set, add = set or {}, add or {}
    in_name, in_values = where_in or ("", ())
    if where_in is not None and not in_values:
        return 0  # IN () matches nothing (and is not SQL everywhere)
    key = ("update", model, tuple(set), tuple(add), tuple(where), in_name, len(in_values))

    def build() -> str:
        column = model._meta.get_field
        assignments = [f"{_q(column(n).column)} = %s" for n in set]
        assignments += [f"{_q(column(n).column)} = {_q(column(n).column)} + %s" for n in add]
        conditions = [f"{_q(column(n).column)} IS NULL" if where[n] is None else f"{_q(column(n).column)} = %s"
                      for n in where]  # fmt: skip
        if in_name:
            conditions.append(f"{_q(column(in_name).column)} IN ({', '.join(['%s'] * len(in_values))})")
        return f"UPDATE {_q(model._meta.db_table)} SET {', '.join(assignments)} WHERE {' AND '.join(conditions)}"

    db = connections[DEFAULT_DB_ALIAS]
    params = [_prep(model, n, v, db) for n, v in set.items()] + list(add.values())
    params += [_prep(model, n, v, db) for n, v in where.items() if v is not None]
    params += [_prep(model, in_name, v, db) for v in in_values]
    with db.cursor() as cursor:
        cursor.execute(_sql(key, build), params)
        return cursor.rowcount


def insert(objects: Sequence[Model]) -> None:
    """Insert new model instances of one model (their defaults and ``auto_now_add`` applied as ``save``
    does) and set their primary keys."""
    if not objects:
        return
    model = type(objects[0])
    fields = _insert_fields(model)
    pk = model._meta.pk
    db = connections[DEFAULT_DB_ALIAS]
    returning = db.features.can_return_rows_from_bulk_insert
    rows = len(objects) if returning else 1

    def build() -> str:
        columns = ", ".join(_q(f.column) for f, _ in fields)
        values = ", ".join(["(" + ", ".join(["%s"] * len(fields)) + ")"] * rows)
        statement = f"INSERT INTO {_q(model._meta.db_table)} ({columns}) VALUES {values}"
        return f"{statement} RETURNING {_q(pk.column)}" if returning else statement

    statement = _sql(("insert", model, rows), build)
    prepared = [[_prep_value(f, plain, f.pre_save(obj, True), db) for f, plain in fields] for obj in objects]
    with db.cursor() as cursor:
        if returning:
            cursor.execute(statement, [value for row in prepared for value in row])
            keys = [row[0] for row in cursor.fetchall()]
        else:
            keys = []
            for row in prepared:
                cursor.execute(statement, row)
                keys.append(db.ops.last_insert_id(cursor, model._meta.db_table, pk.column))
    for obj, key in zip(objects, keys, strict=True):
        setattr(obj, pk.attname, key)
        obj._state.adding = False
        obj._state.db = db.alias


@functools.cache
def _insert_fields(model: type[Model]) -> list[tuple[Field, type | None]]:
    """The fields an insert writes (all but the primary key), each with its plain type (see ``_PLAIN``)."""
    return [(f, _plain_type(f)) for f in model._meta.concrete_fields if not f.primary_key]


def select(
    model: type[Model],
    columns: Iterable[str],
    *,
    where: dict[str, Any],
    below: tuple[str, Any] | None = None,
    between: tuple[str, Any, Any] | None = None,
    where_in: tuple[str, Sequence[Any]] | None = None,
    order: Sequence[str] = (),
    descending: bool = False,
    limit: int | None = None,
) -> list[tuple[Any, ...]]:
    """``SELECT columns WHERE field = value [AND field < x] [AND field BETWEEN a AND b] [AND field IN (...)]
    ORDER BY ... LIMIT n``.

    Values come back as the database gives them; use it for integers and text only."""
    columns = tuple(columns)
    in_name, in_values = where_in or ("", ())
    if where_in is not None and not in_values:
        return []  # IN () matches nothing (and is not SQL everywhere)
    key = ("select", model, columns, tuple(where), below and below[0], between and between[0], in_name,
           len(in_values), tuple(order), descending, limit is not None)  # fmt: skip

    def build() -> str:
        column = model._meta.get_field
        conditions = [f"{_q(column(n).column)} = %s" for n in where]
        if below:
            conditions.append(f"{_q(column(below[0]).column)} < %s")
        if between:
            conditions.append(f"{_q(column(between[0]).column)} BETWEEN %s AND %s")
        if in_name:
            conditions.append(f"{_q(column(in_name).column)} IN ({', '.join(['%s'] * len(in_values))})")
        direction = " DESC" if descending else ""
        statement = (
            f"SELECT {', '.join(_q(column(n).column) for n in columns)} FROM {_q(model._meta.db_table)}"
            f" WHERE {' AND '.join(conditions)}"
        )
        if order:
            statement += " ORDER BY " + ", ".join(f"{_q(column(n).column)}{direction}" for n in order)
        return statement + (" LIMIT %s" if limit is not None else "")

    db = connections[DEFAULT_DB_ALIAS]
    params = [_prep(model, n, v, db) for n, v in where.items()]
    if below:
        params.append(_prep(model, below[0], below[1], db))
    if between:
        params += [_prep(model, between[0], between[1], db), _prep(model, between[0], between[2], db)]
    params += [_prep(model, in_name, v, db) for v in in_values]
    if limit is not None:
        params.append(limit)
    with db.cursor() as cursor:
        cursor.execute(_sql(key, build), params)
        return cursor.fetchall()


def history(conversation_id: Any, *, before: int | None = None, limit: int | None = None) -> list[tuple[Any, ...]]:
    """A conversation's messages with their calls, in one statement: ``(id, role, content, tool_call_id,
    call_id, name, raw_arguments)`` per message and call, oldest first; with ``limit``, the ``limit`` newest
    messages before ``before``."""
    from ..models import Message, ToolCall

    def build() -> str:
        m, c = Message._meta, ToolCall._meta
        column = m.get_field
        inner = (
            f"SELECT {', '.join(_q(column(n).column) for n in ('id', 'role', 'content', 'tool_call_id'))}"
            f" FROM {_q(m.db_table)} WHERE {_q(column('conversation').column)} = %s"
        )
        if before is not None:
            inner += f" AND {_q(column('id').column)} < %s"
        if limit is not None:
            inner += f" ORDER BY {_q(column('id').column)} DESC LIMIT %s"
        calls = ", ".join(f"c.{_q(c.get_field(n).column)}" for n in ("call_id", "name", "raw_arguments"))
        return (
            f"SELECT m.*, {calls} FROM ({inner}) m LEFT JOIN {_q(c.db_table)} c"
            f" ON c.{_q(c.get_field('message').column)} = m.{_q(column('id').column)}"
            f" ORDER BY m.{_q(column('id').column)}, c.{_q(c.get_field('index').column)}"
        )

    params: list[Any] = [_prep(Message, "conversation", conversation_id)]
    if before is not None:
        params.append(before)
    if limit is not None:
        params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(_sql(("history", before is not None, limit is not None), build), params)
        return cursor.fetchall()


def relax_durability() -> None:
    """Let the current transaction's commit return before it reaches the disk (PostgreSQL's
    ``synchronous_commit = off`` for this transaction; other databases keep their own setting).

    For writes that a later write of the same turn makes durable anyway: PostgreSQL writes its log in
    order, so the next commit that waits for the disk brings every earlier one with it. A crash of the
    database server in between loses them, never leaves them half written.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
