"""Whether a process's memory stays flat over many turns (events kept in the process, no Redis).

Run: ``.venv/bin/python bench/memory_growth.py [--turns 1000]``.

Turns run through ``Assistant.run`` in new conversations, as a web process serves many users; the resident
set size is read from ``/proc`` every tenth of the run. After the first tenth (imports, caches, the
database's pages) it should stay flat once the event store has reached its bound (``--events-max-bytes``,
small here so a short run reaches it): the growth per turn is printed, with the event store's own size.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import override_settings  # noqa: E402

from bench._model import ANSWER, QUESTION, model_server  # noqa: E402
from toolcalling import Assistant, streaming  # noqa: E402


def rss_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--events-max-bytes", type=int, default=1024 * 1024, help="EVENTS_MAX_BYTES for the run")
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    step = options.turns // 10
    with model_server() as base_url:
        toolcalling = {**settings.TOOLCALLING, "BASE_URL": base_url, "API_KEY": "x", "MAX_RETRIES": 0,
                       "EVENTS_MAX_BYTES": options.events_max_bytes}  # fmt: skip
        with override_settings(TOOLCALLING=toolcalling):
            assistant = Assistant.get("helper")
            readings = []
            for n in range(options.turns + 1):
                if n % step == 0:
                    gc.collect()
                    readings.append((n, rss_kib(), streaming.get_backend().bytes))
                if n < options.turns:
                    assert assistant.run(user, QUESTION).reply == ANSWER
    for n, rss, events in readings:
        print(f"after {n:5} turns: RSS {rss / 1024:7.1f} MiB, events kept {events / 1024:7.1f} KiB")
    (middle, early, _), (last, late, _) = readings[len(readings) // 2], readings[-1]
    print(f"growth over the last {last - middle} turns: {(late - early) / (last - middle):.2f} KiB per turn")


if __name__ == "__main__":
    main()
