"""The chaos run's model, served by the strict local server in a process of its own: to a user message one answer
asking for ``courier_charge`` and ``courier_receipt``, to their results a short reply. ``python bench/_chaos_model.py
LATENCY`` prints its base URL and serves until stopped."""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._model import served  # noqa: E402
from toolcalling.testing import OpenAICompatibleServer, Reply, ToolCall  # noqa: E402
from toolcalling.testing.scripted import chat_messages  # noqa: E402

ANSWER = "Charged, and the receipt is on its way."


class ChaosModel:
    model_name = "chaos-model"

    def __init__(self, latency: float) -> None:
        self.ids = itertools.count(1)
        self.latency = latency  # seconds each answer takes, as a real model's would

    def __call__(self, body: dict[str, Any]) -> Reply:
        time.sleep(self.latency)
        last = chat_messages(body)[-1]
        if last["role"] == "user":
            amount = json.dumps({"amount": 3})
            return Reply(
                tool_calls=[
                    ToolCall("courier_charge", amount, id=f"call_{next(self.ids)}"),
                    ToolCall("courier_receipt", amount, id=f"call_{next(self.ids)}"),
                ]
            )
        return Reply(content=ANSWER)

    def on_rejected(self, body: Any, errors: list[str]) -> None:
        print("REJECTED:", errors, file=sys.stderr, flush=True)


@contextmanager
def chaos_model(latency: float) -> Iterator[str]:
    """The chaos model's strict server in a subprocess; its base URL."""
    with served(__file__, latency) as base_url:
        yield base_url


if __name__ == "__main__":
    with OpenAICompatibleServer(ChaosModel(float(sys.argv[1]))) as server:
        print(server.base_url, flush=True)
        threading.Event().wait()
