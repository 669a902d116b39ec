"""Which commits wait for the disk: PostgreSQL's ``SET LOCAL synchronous_commit`` lets a transaction's commit skip
the wait (other databases send nothing, so every write counts as waiting)."""

import re
from typing import Any

# The statement and the table it writes, quoted as PostgreSQL and SQLite ("…") or MariaDB (`…`) quote it.
WRITTEN = re.compile(r'^(INSERT|UPDATE)\s+(?:INTO\s+)?[`"]?(\w+)')


def relaxed_writes(queries: Any, statement: str, table: str) -> list[bool]:
    """Per ``statement`` (``INSERT`` or ``UPDATE``) of ``table`` in the captured ``queries``: whether its
    transaction's commit may skip the wait."""
    writes, relaxed = [], False
    for query in queries.captured_queries:
        sql = query["sql"]
        if sql.startswith("BEGIN"):
            relaxed = False
        elif sql.startswith("SET LOCAL synchronous_commit"):
            relaxed = True
        elif (written := WRITTEN.match(sql)) and written.groups() == (statement, table):
            writes.append(relaxed)
    return writes
