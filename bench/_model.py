"""The scripted model of the benchmarks, served by the strict local server in a process of its own.

Every side of a benchmark gets the same answers: to a user message a call of ``add``, to its result a second
call, to that result a short reply — three requests and two tool calls per turn (``requests`` 1 or 2: the reply
comes that much sooner). Run ``python bench/_model.py`` to serve it; it prints its base URL and serves until
stopped.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolcalling.testing import OpenAICompatibleServer, Reply, ToolCall  # noqa: E402
from toolcalling.testing.scripted import chat_messages  # noqa: E402

ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "The first number."},
                "b": {"type": "integer", "description": "The second number."},
            },
            "required": ["a", "b"],
        },
    },
}
# The same tool as a Responses function tool (``strict`` said outright: the Responses API makes it true otherwise).
ADD_RESPONSES = {"type": "function", **ADD["function"], "strict": False}
# The same tool as an Anthropic tool.
ADD_ANTHROPIC = {"name": "add", "description": ADD["function"]["description"],
                 "input_schema": ADD["function"]["parameters"]}  # fmt: skip
QUESTION = "Add 2+3 and 4+5."
ANSWER = "5 and 9."
# A user message the model answers with the request it was sent (its JSON, keys sorted), so a benchmark can check
# that two sides ask the model the same thing (bench/asgi_load.py: the app and the bare view).
PROBE = "Show me the request."


class BenchModel:
    model_name = "bench-model"

    def __init__(self, latency: float = 0.0, answer_bytes: int = 0, requests: int = 3) -> None:
        self.ids = itertools.count(1)
        self.latency = latency  # seconds each answer takes, as a real model's would
        self.requests = requests  # per turn: the reply comes after requests - 1 calls of ``add``
        # ``answer_bytes``: answer every message at once with a text that long (bench/long_answer.py).
        self.long_answer = long_text(answer_bytes) if answer_bytes else None

    def __call__(self, body: dict[str, Any]) -> Reply:
        """Three requests per turn (or ``requests``): a call of ``add``, after its result another one, after
        that the answer."""
        if self.latency:
            time.sleep(self.latency)
        if self.long_answer is not None:
            return Reply(content=self.long_answer)
        messages = chat_messages(body)
        if messages and messages[-1].get("content") == PROBE:
            return Reply(content=json.dumps(body, sort_keys=True))
        answered = 0
        for message in reversed(messages):  # either API's request
            if message["role"] == "user":
                break
            answered += message["role"] == "tool"
        if answered >= self.requests - 1:
            return Reply(content=ANSWER)
        a, b = ((2, 3), (4, 5))[answered]
        return Reply(tool_calls=[ToolCall("add", json.dumps({"a": a, "b": b}), id=f"call_{next(self.ids)}")])

    def on_rejected(self, body: Any, errors: list[str]) -> None:
        # The strict server refused a request: the benchmark is wrong, say so loudly.
        print("REJECTED:", errors, file=sys.stderr, flush=True)


def long_text(size: int) -> str:
    """Prose-like text of ``size`` characters: words and sentences, with non-ASCII ones among them."""
    words = "the order ships on Monday; Lieferung am Montag, 배송은 월요일입니다 and a refund follows.".split()
    text = " ".join(itertools.islice(itertools.cycle(words), size // 4 + 1))
    return text[:size]


@contextmanager
def model_server(latency: float = 0.0, answer_bytes: int = 0, piece: int = 0, requests: int = 3) -> Iterator[str]:
    """The bench model's strict server in a subprocess (so it never shares the benchmark's GIL); its base URL.
    ``piece``: the characters of text per streamed chunk (0: the strict server's own, a few as the API's);
    ``requests``: model requests per turn (1: the answer at once)."""
    with served(__file__, latency, answer_bytes, piece, requests) as base_url:
        yield base_url


@contextmanager
def served(script: str, *arguments: object) -> Iterator[str]:
    """``python script arguments...`` in a subprocess, which prints its strict server's base URL first; that URL,
    the server stopped on leaving."""
    command = [sys.executable, script, *map(str, arguments)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(10)


if __name__ == "__main__":
    latency = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    answer_bytes = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    requests = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    if len(sys.argv) > 3 and int(sys.argv[3]):
        from toolcalling.testing import backend

        backend.CONTENT_PIECE = int(sys.argv[3])
    with OpenAICompatibleServer(BenchModel(latency, answer_bytes, requests)) as server:
        print(server.base_url, flush=True)
        threading.Event().wait()  # until the benchmark terminates this process
