"""What a cold start costs the first turn of a side that runs in a runner process of its own, in one run.

Run: ``.venv/bin/python bench/runner_start.py [--rounds 7] [--postgres]``.

``loop_overhead.py`` runs the app and the hand-written persisting loop in runner processes (``_app_runner.py``),
which wait on their pipe while the other sides run, and the bare loops and the peers in its own process, busy all
along. Here each runner side's first turn is timed both ways, in each round: cold, right after this process ran
pydantic-ai's stored 20-turn conversation and the bare loop's (as the other sides of a round run while a runner
waits), and warm, right after a one-turn conversation of its own, as ``loop_overhead.py`` now starts every side.
pydantic-ai's stored turn and the bare loop are timed in this process for comparison. Printed: the median first
turn of each, and cold over warm.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
VAR = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-")))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from bench._model import model_server  # noqa: E402
from bench._persisting_peers import PydanticAIStored  # noqa: E402
from bench._postgres import postgres  # noqa: E402
from bench._sides import app_side, close_sides  # noqa: E402
from bench.loop_overhead import bare_sdk  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--postgres", action="store_true", help="on a private PostgreSQL cluster instead of SQLite")
    options = parser.parse_args()
    database = "postgresql" if options.postgres else "sqlite"
    runners = {"toolcalling": app_side(database), "persisting, client.post": app_side(database, command="persist-post")}
    peer = PydanticAIStored(database, VAR)
    first: dict[str, list[float]] = {}
    with ExitStack() as stack:
        if options.postgres:
            stack.enter_context(postgres(VAR))
        base_url = stack.enter_context(model_server())
        stack.callback(peer.close)  # closed before the database they use goes away, also after an error
        stack.callback(close_sides, runners)
        for side in runners.values():
            side(base_url, 2)  # imports, connections and database pages
        peer(base_url, 2)
        for _ in range(options.rounds):
            for name, side in runners.items():
                peer(base_url, 20)  # what the other sides of a round do while the runner waits
                bare_sdk(base_url, 20)
                first.setdefault(f"{name}, cold", []).append(side(base_url, 3)[0])
                first.setdefault(f"{name}, warm", []).append(side(base_url, 3)[0])
            first.setdefault("pydantic-ai, stored", []).append(peer(base_url, 3)[0])
            first.setdefault("bare SDK loop", []).append(bare_sdk(base_url, 3)[0])
    median = {name: statistics.median(times) for name, times in first.items()}
    print(f"First turn on {database}, median of {options.rounds} rounds:")
    for name, seconds in median.items():
        print(f"{name:<36} {seconds * 1000:7.1f}ms")
    for name in runners:
        print(f"{name + ', cold over warm':<36} {median[f'{name}, cold'] / median[f'{name}, warm']:7.2f}")


if __name__ == "__main__":
    main()
