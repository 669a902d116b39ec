"""The app's side of the loop benchmark, in a process of its own so it can run on either database.

It reads ``run <turns>`` lines on stdin and answers each with a JSON list of seconds per turn: ``turns`` turns of
one new conversation through ``Assistant.run`` (the first turn makes it), every message and call stored
(``persist <turns>``: the same turns by the hand-written persisting loop of ``_persisting_loop.py``;
``persist-post <turns>``: that loop asking through ``client.post``, as the app asks).
The database comes from ``TOOLCALLING_TEST_DATABASE`` as in the test settings; the model server from ``--base-url``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import override_settings  # noqa: E402

from bench._model import ANSWER, QUESTION  # noqa: E402
from bench._persisting_loop import persisting_anthropic_loop, persisting_loop  # noqa: E402
from toolcalling import Assistant  # noqa: E402
from toolcalling.models import Conversation  # noqa: E402


class BenchAssistant(Assistant):
    id = "bench"
    instructions = "You add numbers."
    tools = ["add"]  # the test site's add: the same schema the bare loop offers


def run(
    assistant: Assistant, user: object, turns: int, around: Callable[[], AbstractContextManager[Any]] = nullcontext
) -> list[float]:
    """Seconds per turn; ``around``: what each turn runs in (``bench/floor_cost.py`` counts a turn's work there)."""
    # The first turn makes its conversation, on the clock (``Assistant.run`` without one stores it with the
    # turn's first write); the bare loop starts from an empty history.
    conversation: Conversation | None = None
    times = []
    for _ in range(turns):
        with around():
            started = time.perf_counter()
            result = assistant.run(user, QUESTION, conversation)
            times.append(time.perf_counter() - started)
        assert result.reply == ANSWER, result.reply
        conversation = result.conversation
    return times


def bench_settings(base_url: str, api: str = "chat_completions") -> dict[str, Any]:
    """The test site's ``TOOLCALLING`` with the bench model's server, ``api`` and a model of that API."""
    model = {"responses": "gpt-5-mini", "anthropic": "claude-sonnet-4-5"}.get(api, "m")
    return {**settings.TOOLCALLING, "BASE_URL": base_url, "API_KEY": "x", "MAX_RETRIES": 0, "MODEL": model, "API": api}


def main() -> None:
    base_url = sys.argv[sys.argv.index("--base-url") + 1]
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    # --api responses: the Responses API with a reasoning model, so reasoning items are stored and sent back;
    # --api anthropic: the Messages API (the SDK adds /v1 to the base URL, the app drops it from BASE_URL).
    api = sys.argv[sys.argv.index("--api") + 1] if "--api" in sys.argv else "chat_completions"
    toolcalling = bench_settings(base_url, api)
    # bench/pricing_overhead.py: the same turns with every answer priced (TOOLCALLING_BENCH_PRICES, JSON).
    toolcalling["PRICES"] = json.loads(os.environ.get("TOOLCALLING_BENCH_PRICES", "{}"))
    with override_settings(TOOLCALLING=toolcalling):
        assistant = Assistant.get("bench")
        print("ready", flush=True)
        for line in sys.stdin:
            command, turns = line.split()
            if command == "persist":
                loop = persisting_anthropic_loop if api == "anthropic" else persisting_loop
                print(json.dumps(loop(base_url, user, int(turns))), flush=True)
            elif command == "persist-post":
                print(json.dumps(persisting_loop(base_url, user, int(turns), post=True)), flush=True)
            else:
                print(json.dumps(run(assistant, user, int(turns))), flush=True)


if __name__ == "__main__":
    main()
