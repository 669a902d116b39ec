"""SQL the ORM built once, sent again with new parameters: for a statement made on every turn or request whose
filter is always the same but for its parameters, such as a turn's fence (``update_as_built``) or the read of the
request user's conversation (``get_as_built``).

Building a statement (its ``WHERE`` compiled, each value prepared, the columns listed) costs some hundreds of
function calls, more than sending it. The SQL built for one call is kept for the next of the same kind on the same
database: only the parameters change, and they are prepared as the ORM prepares them. The first call of each kind
checks that the ORM's own parameters are the ones given here; where they are not, nothing is kept, and every call
of that kind is the ORM's own.

It is sent through the connection's cursor, as the ORM sends it: a site's execute wrappers and the debug log see
it. As with ``update()``, an update sends no signal; a row read becomes its model's instance through ``from_db``
with the ORM's converters, as a queryset makes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model, QuerySet
from django.db.models.sql import UpdateQuery

from ..usage import Increment

M = TypeVar("M", bound=Model)
VALUE, NULL, ADDED = "value", "null", "added"  # a field's new value: a value, ``None``, an ``Increment``


class BuiltUpdate(NamedTuple):
    """An update's SQL, and whether it takes a ``None`` as a parameter (Django 6's ``= %s``) or writes ``NULL``."""

    sql: str
    null_parameters: bool


# The SQL built, by the caller's name for its filter, the database alias and the values' shape; ``ORM`` where the
# ORM's parameters were not this module's. Shared by threads; a key is only ever given one (two threads building it
# at once build the same).
ORM = BuiltUpdate("", False)
_BUILT: dict[Hashable, BuiltUpdate] = {}


def shape(values: Mapping[str, Any]) -> tuple[tuple[str, str], ...] | None:
    """Each field with how its value is written; ``None`` when one is an expression other than ``Increment``
    (or a model instance): those are left to the ORM every time."""
    kinds = []
    for name, value in values.items():
        if isinstance(value, Increment):
            kinds.append((name, ADDED))
        elif hasattr(value, "resolve_expression") or hasattr(value, "prepare_database_save"):
            return None
        else:
            kinds.append((name, NULL if value is None else VALUE))
    return tuple(kinds)


def update_as_built(
    model: type[Model],
    using: str,
    values: Mapping[str, Any],
    *,
    filtered: Callable[[], QuerySet[Any]],
    filter_name: Hashable,
    where: Sequence[Any],
) -> int:
    """``filtered().update(**values)`` on ``using``: the rows it changed. ``filtered`` gives the queryset of
    ``model`` on ``using`` (made only when the SQL is built, or left to the ORM); ``filter_name`` names its filter
    for the cache (one name, one filter); ``where`` is that filter's parameters, in the order of its SQL, as the
    database takes them."""
    kinds = shape(values)
    key = (filter_name, using, kinds)
    built = None if kinds is None else _BUILT.get(key)
    if kinds is None or built == ORM:
        return filtered().update(**values)
    connection = connections[using]
    params: list[Any] = []  # with the NULLs written as NULL; and with each NULL a parameter ``None``
    nulls: list[Any] = []
    for (name, kind), value in zip(kinds, values.values(), strict=True):
        if kind == NULL:
            nulls.append(None)
            continue
        if kind == ADDED:
            param = value.amount
        else:
            field = model._meta.get_field(name)
            assert isinstance(field, Field)  # a column of the model, as update() takes
            param = field.get_db_prep_save(value, connection)
        params.append(param)
        nulls.append(param)
    params.extend(where)
    nulls.extend(where)
    if built is None:
        queryset = filtered()
        query = queryset.query.chain(UpdateQuery)
        assert isinstance(query, UpdateQuery)
        query.add_update_values(dict(values))
        sql, sent = query.get_compiler(using).as_sql()
        # Fields of a parent model are more statements; parameters not prepared as here are the ORM's to send.
        if query.get_related_updates() or list(sent) not in (params, nulls):
            _BUILT[key] = ORM
            return queryset.update(**values)
        _BUILT[key] = built = BuiltUpdate(sql, null_parameters=list(sent) == nulls and params != nulls)
    with transaction.mark_for_rollback_on_error(using=using), connection.cursor() as cursor:
        cursor.execute(built.sql, nulls if built.null_parameters else params)
        return int(cursor.rowcount)


class BuiltRead(NamedTuple):
    """A read's SQL, the attribute names of the columns it selects and the ORM's converters of those columns, as
    ``SQLCompiler.get_converters`` gives them for ``connection`` (bound to it: kept per thread)."""

    sql: str
    names: list[str]
    converters: list[tuple[int, tuple[list[Callable[..., Any]], Any]]]
    connection: BaseDatabaseWrapper


_READS = threading.local()


def get_as_built(
    model: type[M],
    using: str,
    *,
    filtered: Callable[[], QuerySet[M]],
    filter_name: Hashable,
    where: Sequence[Any],
) -> M | None:
    """The first ``model`` instance of ``filtered()`` (its SQL is built once per thread and database; ``filter_name``
    and ``where`` as for ``update_as_built``), or ``None``. For one row by its key: the query is read as given,
    with its own limit. A query that selects more than the model's own columns is the ORM's to read every time."""
    reads: dict[Hashable, BuiltRead | None] = _READS.__dict__.setdefault("built", {})
    connection = connections[using]
    key = (filter_name, using)
    read = reads.get(key)
    if key not in reads or (read is not None and read.connection is not connection):
        reads[key] = read = built_read(filtered(), using, where)  # None: the ORM's to read, every time
    if read is None:
        return next(iter(filtered()), None)
    with connection.cursor() as cursor:
        cursor.execute(read.sql, where)
        found = cursor.fetchone()
    if found is None:
        return None
    row = list(found)
    for at, (converters, expression) in read.converters:
        for converter in converters:
            row[at] = converter(row[at], expression, connection)
    return model.from_db(using, read.names, row)


def built_read(queryset: QuerySet[Any], using: str, where: Sequence[Any]) -> BuiltRead | None:
    """The read of ``queryset`` on ``using``, built; ``None`` when it selects more than its model's own columns
    (related rows, annotations) or its parameters are not ``where``."""
    compiler = queryset.query.get_compiler(using)
    sql, params = compiler.as_sql()
    klass = compiler.klass_info or {}
    columns = [selected[0] for selected in compiler.select[: compiler.col_count]]
    plain = (
        klass.get("model") is queryset.model
        and not klass.get("related_klass_infos")
        and not compiler.annotation_col_map
        and list(klass.get("select_fields", ())) == list(range(len(columns)))
    )
    if not plain or list(params) != list(where):
        return None
    names = [column.target.attname for column in columns]
    return BuiltRead(sql, names, list(compiler.get_converters(columns).items()), compiler.connection)
