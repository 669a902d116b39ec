"""A worker of the site as the README writes it keeps its database connection between tasks as ``CONN_MAX_AGE``
says, and replaces one the database dropped, instead of Celery's default of a new connection for every task."""

from collections.abc import Iterator

import pytest
from django.db import connection

from tests.approval.conftest import running_worker
from tests.approvalapp.tasks import database_connection
from tests.celery_app import app as celery_app

QUEUE = "connections"


@pytest.fixture
def queue_worker(redis_server, model_switchboard, transactional_db, tmp_path, request) -> Iterator[None]:
    """A solo worker (one thread, one connection) consuming only this test's queue, with the given CONN_MAX_AGE."""
    options = ("--pool=solo", "-Q", QUEUE, "--hostname", f"connections-{request.param}@%h")
    celery_app.conf.task_always_eager = False
    try:
        with running_worker(model_switchboard[1], tmp_path / "worker.log", *options,
                            TOOLCALLING_TEST_CONN_MAX_AGE=str(request.param)):  # fmt: skip
            yield
    finally:
        celery_app.conf.task_always_eager = True


def used() -> dict:
    return database_connection.apply_async(queue=QUEUE).get(timeout=30)


@pytest.mark.parametrize("queue_worker", [600], indirect=True)
def test_a_worker_keeps_its_connection_between_tasks_and_replaces_a_dropped_one(queue_worker):
    first, second, third = used(), used(), used()
    assert [first["uses"], second["uses"], third["uses"]] == [1, 2, 3]  # one connection for all three
    if connection.vendor == "sqlite":
        return  # SQLite has no server that could drop the connection
    assert first["backend"] == second["backend"] == third["backend"]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_terminate_backend(%s)", [third["backend"]])
            assert cursor.fetchone()[0] is True
        else:
            cursor.execute("KILL CONNECTION %s", [third["backend"]])  # an error if there were no such connection
    after = used()  # the health check finds the connection dead and opens another before the task runs
    assert after["uses"] == 1
    assert after["backend"] != third["backend"]


@pytest.mark.parametrize("queue_worker", [0], indirect=True)
def test_with_conn_max_age_0_every_task_gets_a_new_connection(queue_worker):
    assert [used()["uses"] for _ in range(3)] == [1, 1, 1]
