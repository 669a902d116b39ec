"""Background turns on 1, 2 and 4 Celery workers: throughput as a share of the ideal (N times one worker's).

Run: ``.venv/bin/python bench/background_throughput.py [--latency 0.05] [--turns-per-worker 8]``.

A private redis-server is the broker; each worker is a real ``celery worker --pool=solo`` process of the test
site; the model answers each request after ``--latency`` seconds, as a real model would, so a turn waits on
its model for three times that. Every run queues its turns at once (``"background": true`` as the API does:
claim, then ``toolcalling.run_turn``) and ends when every conversation is idle again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
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


def run(workers: int, turns: int, broker: str, base_url: str) -> float:
    """Seconds until ``turns`` background turns, queued at once, are all done by ``workers`` workers."""
    user = get_user_model().objects.get(username="bench")
    env = {"CELERY_BROKER_URL": broker, "CELERY_RESULT_BACKEND": broker}
    logs = [VAR / f"worker-{workers}-{n}.log" for n in range(workers)]
    processes = [
        services.start_worker(
            log,
            "--pool=solo",
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
        conversations = [Conversation.objects.create(user=user, assistant_id="helper") for _ in range(turns)]
        assistant = Assistant.get("helper")
        started = time.perf_counter()
        for conversation in conversations:
            token = Turn(assistant, conversation, user=user).claim()
            enqueue(RUN_TURN, str(conversation.pk), QUESTION, str(token))
        ids = [c.pk for c in conversations]
        services.wait_until(
            lambda: not Conversation.objects.filter(pk__in=ids).exclude(status="idle").exists(),
            timeout=600,
            what="the background turns",
        )
        return time.perf_counter() - started
    finally:
        for process, log in zip(processes, logs, strict=True):
            services.stop_worker(process, log)


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
            elapsed = statistics.median(run(workers, turns, broker, base_url) for _ in range(options.rounds))
            throughput[workers] = turns / elapsed
        print(f"model latency {options.latency * 1000:.0f} ms per answer, 3 answers per turn; "
              f"{options.turns_per_worker} turns per worker; median of {options.rounds} rounds")  # fmt: skip
        for workers, rate in throughput.items():
            share = rate / (workers * throughput[1])
            print(f"{workers} worker(s): {rate:6.2f} turns/s, {share:.2f} of ideal")


if __name__ == "__main__":
    main()
