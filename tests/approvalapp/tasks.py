"""A task that only writes down when it started: the bare Celery round trip bench/approval_latency.py compares with."""

from celery import shared_task

from .tools import stamp_path


@shared_task(name="tests.stamp", ignore_result=True)
def stamp(key: str) -> None:
    import time

    with open(stamp_path(key), "w") as out:
        out.write(repr(time.time()))
