"""What pricing every answer adds to a stored turn: the app with ``PRICES`` for its model against the app with no
price at all, in one run.

Run: ``.venv/bin/python bench/pricing_overhead.py [--turns 20] [--rounds 7] [--postgres]``.

Both sides are ``bench/_app_runner.py`` (the app's ``Assistant.run``, every message and call stored) against the
same strict local server, the turns of ``loop_overhead.py`` (three requests, two tool calls per turn). The priced
side stores each answer's cost and price and adds the cost to the conversation and the usage counters; the
unpriced side counts each answer as unpriced instead, so both write the same rows. Printed: the median time per
turn of each side over the rounds, and the priced side's ratio to the unpriced one (1.00 is level).
Then, in this process, one answer priced from genai-prices' database (an OpenAI model at OpenAI's URL) and from
``PRICES``, against the median turn: the lookup the turns above do not make (their endpoint is local).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
VAR = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-")))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from bench._model import model_server  # noqa: E402
from bench._postgres import postgres  # noqa: E402
from bench._sides import app_side, close_sides  # noqa: E402
from toolcalling.model_apis import Usage  # noqa: E402
from toolcalling.testutils import override_toolcalling  # noqa: E402
from toolcalling.usage import Pricing  # noqa: E402

PRICES = {"m": {"input": "1.25", "cached_input": "0.125", "output": "10.00"}}  # the runner's model is "m"
ANSWER_USAGE = Usage(prompt_tokens=1200, completion_tokens=80, total_tokens=1280, cached_tokens=1024)


def pricing_alone(repeat: int = 2000) -> dict[str, float]:
    """Seconds to price one answer (a fresh ``Pricing`` per answer, as a turn's first answer has), per source."""
    found = {}
    for label, settings in (
        ("genai-prices", {"BASE_URL": "https://api.openai.com/v1", "PRICES": {}}),
        ("PRICES", {"PRICES": {"gpt-4o-mini": PRICES["m"]}}),
    ):
        with override_toolcalling(**settings):
            assert Pricing("gpt-4o-mini", "openai").cost("gpt-4o-mini", ANSWER_USAGE).amount is not None
            started = time.perf_counter()
            for _ in range(repeat):
                Pricing("gpt-4o-mini", "openai").cost("gpt-4o-mini-2024-07-18", ANSWER_USAGE)
            found[label] = (time.perf_counter() - started) / repeat
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--postgres", action="store_true", help="also on a private PostgreSQL cluster")
    options = parser.parse_args()

    databases = {"SQLite": "sqlite", **({"PostgreSQL": "postgresql"} if options.postgres else {})}
    sides = {}
    for label, database in databases.items():
        sides[f"unpriced, {label}"] = app_side(database)
        sides[f"priced, {label}"] = app_side(database, {"TOOLCALLING_BENCH_PRICES": json.dumps(PRICES)})
    times: dict[str, list[float]] = {name: [] for name in sides}
    with ExitStack() as stack:
        if options.postgres:
            stack.enter_context(postgres(VAR))
        base_url = stack.enter_context(model_server())
        for side in sides.values():
            side(base_url, 2)  # warm up imports, connections and database pages
        for round_ in range(options.rounds):
            # Interleaved, so drift in the machine hits every side alike, and in turn first and last.
            order = list(sides.items())
            for name, side in reversed(order) if round_ % 2 else order:
                times[name].extend(side(base_url, options.turns))
        stack.callback(close_sides, sides)
    print(f"{options.turns}-turn conversations, 3 requests per turn, {options.rounds} rounds; median per turn.")
    for label in databases:
        plain = statistics.median(times[f"unpriced, {label}"])
        priced = statistics.median(times[f"priced, {label}"])
        print(f"{label:<11} unpriced {plain * 1000:7.2f}ms  priced {priced * 1000:7.2f}ms  ratio {priced / plain:5.3f}")
    turn = statistics.median(times["unpriced, SQLite"])
    for source, seconds in pricing_alone().items():
        # A turn prices each of its three answers (the meter's count and the stored message share one lookup).
        bound = 1 + 3 * seconds / turn
        print(f"one answer priced from {source:<13} {seconds * 1e6:7.1f}µs = {seconds / turn * 100:.3f}% of a turn; "
              f"three a turn: ratio {bound:.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
