"""Tasks of the test site: a bare task for bench/approval_latency.py, and one that tells which connection it used."""

from celery import shared_task
from django.db import connection

from .tools import stamp_path


@shared_task(name="tests.stamp", ignore_result=True)
def stamp(key: str) -> None:
    """Write down when it started: the bare Celery round trip bench/approval_latency.py compares with."""
    import time

    with open(stamp_path(key), "w") as out:
        out.write(repr(time.time()))


@shared_task(name="tests.database_connection")
def database_connection() -> dict:
    """How many tasks have used this worker's database connection (a temporary table lives as long as the
    connection), and on PostgreSQL and MariaDB the server's id for it (its backend process, its thread)."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE IF NOT EXISTS tests_connection_uses (n integer)")
        cursor.execute("INSERT INTO tests_connection_uses (n) VALUES (1)")
        cursor.execute("SELECT COUNT(*) FROM tests_connection_uses")
        uses = cursor.fetchone()[0]
        backend = None
        if connection.vendor in ("postgresql", "mysql"):
            cursor.execute("SELECT pg_backend_pid()" if connection.vendor == "postgresql" else "SELECT CONNECTION_ID()")
            backend = cursor.fetchone()[0]
    return {"uses": uses, "backend": backend}
