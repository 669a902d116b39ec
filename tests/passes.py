"""Which tests the passes of ``make test`` run: the full pass (SQLite) runs every test; the database passes
(PostgreSQL, MariaDB) run ``-m database``, the tests whose outcome can depend on the database.

A test is marked ``database`` by a rule that holds for every test, new ones included: its group (directory), a
fixture that commits for real or reaches the test database from another thread or process, a ``django_db`` marker
or test case class with real transactions or other connections, or a module that reads which database it is, routes
between connections, counts the SQL sent, locks rows or runs migrations. The few others say
``@pytest.mark.database`` themselves. Tests that cannot depend on the database (the packaging, documentation and
schemathesis runs) say ``@pytest.mark.once`` or are in a group of ``ONCE_GROUPS``; no rule puts them in a database
pass.
``tests/core/test_passes.py`` checks the rules against a real collection.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from django.test import TestCase, TransactionTestCase
from pytest_django.plugin import validate_django_db

TESTS = Path(__file__).parent

# Every test of these groups is about the database: what is stored and how (storage), decisions as conditional
# updates and the worker's connections (approval), the stream's readers and writers in other threads (streaming),
# concurrent turns and their locks (races, limits), and what is kept whatever arrives (integrity).
GROUPS = frozenset({"storage", "approval", "streaming", "races", "limits", "integrity"})

# Fixtures that commit for real, or let another thread or process use the test database: the live servers (WSGI and
# uvicorn) and the Celery workers (a worker's fixture asks for ``transactional_db`` too: a worker sees commits only).
FIXTURES = frozenset(
    {
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "live_server",
        "asgi_live_server",
        "celery_worker_process",
        "worker_process",
    }
)

# A module that says any of these reads the database's own behaviour: which database it is, a router between
# connections, the statements a request sends, row locks, migrations run on stored rows.
SQL = re.compile(
    r"\.vendor\b|DATABASE_ROUTERS|CaptureQueriesContext|django_assert_(max_)?num_queries|select_for_update"
    r"|MigrationExecutor"
)

# Groups that cannot depend on the database: they build and install the package, the documentation site, a new site
# from the docs. They run in the full pass only.
ONCE_GROUPS = frozenset({"packaging", "docs", "newcomer"})


def group(item: pytest.Item) -> str:
    """The suite's directory the test is in (``approval``, ``core`` …), or its file's name at the top."""
    return Path(item.path).relative_to(TESTS).parts[0]


@cache
def _module_reads_sql(path: Path) -> bool:
    return SQL.search(path.read_text()) is not None


def once(item: pytest.Item) -> bool:
    """Whether the test runs in the full pass only: it cannot depend on the database."""
    return item.get_closest_marker("once") is not None or group(item) in ONCE_GROUPS


def database_reason(item: pytest.Item) -> str | None:
    """Why the test is in the database passes, or None when no rule puts it there."""
    if group(item) in GROUPS:
        return f"in {group(item)}/"
    if item.get_closest_marker("database"):
        return "marked database"
    fixtures = FIXTURES.intersection(getattr(item, "fixturenames", ()))
    if fixtures:
        return f"uses {', '.join(sorted(fixtures))}"
    marker = item.get_closest_marker("django_db")
    if marker is not None:
        transaction, reset_sequences, databases, serialized_rollback, _ = validate_django_db(marker)
        if transaction or reset_sequences or serialized_rollback:
            return "django_db with real transactions"
        if databases is not None and set(databases) != {"default"}:  # "__all__" too
            return "django_db on other connections"
    cls: Any = getattr(item, "cls", None)
    if isinstance(cls, type) and issubclass(cls, TransactionTestCase):
        if not issubclass(cls, TestCase):
            return "a TransactionTestCase"
        if cls.databases != {"default"}:
            return "a TestCase on other connections"
    if _module_reads_sql(Path(item.path)):
        return "its module reads the database's own behaviour"
    return None


def mark(items: list[pytest.Item]) -> None:
    """Mark ``database`` the tests a rule puts in the database passes (their reason is the marker's)."""
    for item in items:
        if once(item):
            if item.get_closest_marker("database"):
                raise pytest.UsageError(f"{item.nodeid} is marked both database and once")
            continue
        reason = database_reason(item)
        if reason is not None and reason != "marked database":
            item.add_marker(pytest.mark.database(reason=reason))


# With ``-p tests.passes`` and TOOLCALLING_TEST_COLLECTED naming a file, a collection writes there what each test it
# kept or left out is (tests/core/test_passes.py reads it); in any other run these hooks are not registered.
def _facts(item: pytest.Item, kept: bool) -> dict[str, Any]:
    marker = item.get_closest_marker("django_db")
    transaction, _, databases, _, _ = validate_django_db(marker) if marker else (False, False, None, False, None)
    callspec = getattr(item, "callspec", None)
    return {
        "id": item.nodeid,
        "kept": kept,
        "group": group(item),
        "database": item.get_closest_marker("database") is not None,
        "once": item.get_closest_marker("once") is not None,
        "fixtures": sorted(getattr(item, "fixturenames", ())),
        "transaction": transaction,
        "databases": sorted(databases) if databases is not None else None,
        "api": callspec.params.get("model_api") if callspec else None,
    }


_left_out: list[pytest.Item] = []


def pytest_deselected(items: list[pytest.Item]) -> None:
    _left_out.extend(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    path = os.environ.get("TOOLCALLING_TEST_COLLECTED")
    if path:
        facts = [_facts(item, True) for item in session.items] + [_facts(item, False) for item in _left_out]
        Path(path).write_text("".join(json.dumps(fact) + "\n" for fact in facts))
