"""Background turns on 1, 2 and 4 Celery workers: throughput as a share of the ideal (N times one worker's).

Run: ``.venv/bin/python bench/background_throughput.py [--latency 0.05] [--turns-per-worker 8]``.

A private redis-server is the broker; each worker is a real ``celery worker --pool=solo`` process of the test
site; the model answers each request after ``--latency`` seconds, as a real model would, so a turn waits on
its model for three times that. The workers of each count are started once, with ``--prefetch-multiplier=1`` as
the README advises, and warmed up by one round that is not measured, as long-running workers are. Every run
queues its turns at once (``"background": true`` as the API does: claim, then ``toolcalling.run_turn``) and ends
when every conversation is idle again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
VAR = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-")))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from bench._model import QUESTION, model_server  # noqa: E402
from tests import services  # noqa: E402
from tests.celery_app import app as celery_app  # noqa: E402
from toolcalling import Assistant  # noqa: E402
from toolcalling.engine import RUN_TURN, Turn, enqueue  # noqa: E402
from toolcalling.models import Conversation  # noqa: E402


@contextmanager
def workers_running(workers: int, broker: str, base_url: str) -> Iterator[None]:
    """``workers`` real solo workers of the test site, started and ready, stopped at the end."""
    env = {"CELERY_BROKER_URL": broker, "CELERY_RESULT_BACKEND": broker}
    logs = [VAR / f"worker-{workers}-{n}.log" for n in range(workers)]
    processes = [
        services.start_worker(
            log,
            "--pool=solo",
            "--prefetch-multiplier=1",  # as the README advises for background turns
            "--hostname",
            f"bench{n}@%h",
            db_name=str(connection.settings_dict["NAME"]),
            base_url=base_url,
            env=env,
        )  # fmt: skip
        for n, log in enumerate(logs)
    ]
    try:
        for process, log in zip(processes, logs, strict=True):
            services.wait_for_worker(process, log)
        yield
    finally:
        for process, log in zip(processes, logs, strict=True):
            services.stop_worker(process, log)


def run(turns: int) -> float:
    """Seconds until ``turns`` background turns, queued at once, are all done by the running workers."""
    user = get_user_model().objects.get(username="bench")
    conversations = [Conversation.objects.create(user=user, assistant_id="helper") for _ in range(turns)]
    assistant = Assistant.get("helper")
    started = time.perf_counter()
    for conversation in conversations:
        token = Turn(assistant, conversation, user=user).claim()
        enqueue(RUN_TURN, str(conversation.pk), QUESTION, str(token))
    ids = [c.pk for c in conversations]
    deadline = started + 600
    while Conversation.objects.filter(pk__in=ids).exclude(status="idle").exists():  # polled finely: the end
        assert time.perf_counter() < deadline, "the background turns took over 600 s"  # is what is measured
        time.sleep(0.005)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the model takes per answer")
    parser.add_argument("--turns-per-worker", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    get_user_model().objects.get_or_create(username="bench")
    with services.redis_server(VAR, services.free_port()) as broker, model_server(options.latency) as base_url:
        celery_app.conf.update(task_always_eager=False, broker_url=broker, result_backend=broker)
        settings.TOOLCALLING = {**settings.TOOLCALLING, "BASE_URL": base_url}
        throughput: dict[int, float] = {}
        for workers in (1, 2, 4):
            turns = workers * options.turns_per_worker
            with workers_running(workers, broker, base_url):
                run(turns)  # warms the workers up (imports, the model client), as a long-running worker is
                elapsed = statistics.median(run(turns) for _ in range(options.rounds))
            throughput[workers] = turns / elapsed
        print(f"model latency {options.latency * 1000:.0f} ms per answer, 3 answers per turn; "
              f"{options.turns_per_worker} turns per worker; median of {options.rounds} rounds")  # fmt: skip
        for workers, rate in throughput.items():
            share = rate / (workers * throughput[1])
            print(f"{workers} worker(s): {rate:6.2f} turns/s, {share:.2f} of ideal")


if __name__ == "__main__":
    main()
