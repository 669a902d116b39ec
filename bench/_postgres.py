"""A private PostgreSQL cluster for a benchmark, with a production server's durability (commits wait for the disk).

``with postgres(var)`` starts it in ``var/postgres`` (where the test settings look for its socket), creates the
test site's database, and sets ``TOOLCALLING_TEST_DATABASE=postgresql`` for this process and its children,
with persistent connections as a production site has them; start it before ``django.setup()``.
``max_connections``: the server's limit (a site under load with a thread per turn holds one per thread).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def postgres(var: Path, max_connections: int = 200) -> Iterator[None]:
    import psycopg

    from tests.services import POSTGRES_USER, postgres_server

    durable = os.environ.get("TOOLCALLING_BENCH_PG_DURABLE", "1") != "0"  # "0": commits do not wait for the disk
    with postgres_server(var / "postgres", durable=durable, max_connections=max_connections) as socket:
        with psycopg.connect(host=str(socket), user=POSTGRES_USER, dbname="postgres", autocommit=True) as admin:
            admin.execute("CREATE DATABASE toolcalling")
        os.environ["TOOLCALLING_TEST_DATABASE"] = "postgresql"
        os.environ["TOOLCALLING_TEST_CONN_MAX_AGE"] = "600"  # persistent connections, as in production
        yield


def server_pid(var: Path) -> int:
    """The process id of the cluster's postmaster, the parent of every backend (``postgres(var)`` running)."""
    return int((var / "postgres" / "data" / "postmaster.pid").read_text().split()[0])
