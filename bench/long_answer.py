"""A long answer streamed against the same answer as JSON, in one run: streaming must cost time linear in its length.

Run: ``.venv/bin/python bench/long_answer.py [--size 2000000] [--rounds 3] [--piece N] [--no-bare]``.

The model answers every message with one text of ``--size`` characters (prose, some of it Korean and German);
the strict server streams it as the real API does, in pieces of a few characters (``CONTENT_PIECE``; ``--piece``
sets another size): 2 MB are half a million chunks. The site runs under uvicorn in a process of its own. The
JSON turn is a plain ``POST .../messages/``; the streamed turn the same POST with ``Accept: text/event-stream``,
read to its ``turn_end``. The bare stream is the hand-written way: the ``openai`` SDK reading the same stream
from the same server and joining its text, storing and sending nothing (``--no-bare`` leaves it out).
Printed: the median of each and the ratios (lower is better). ``--size`` twice as large should take about
twice as long, not four times.
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

import httpx2  # noqa: E402
import openai  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from bench._model import QUESTION, model_server  # noqa: E402
from bench._site import AUTH, SSE, site  # noqa: E402
from toolcalling.models import Conversation, Message  # noqa: E402
from toolcalling.testing.backend import CONTENT_PIECE  # noqa: E402


def json_turn(base: str, conversation_id: str) -> float:
    started = time.perf_counter()
    url = f"{base}/api/toolcalling/conversations/{conversation_id}/messages/"
    response = httpx2.post(url, json={"content": QUESTION}, auth=AUTH, timeout=900)
    assert response.status_code == 201, response.text[:300]
    return time.perf_counter() - started


def streamed_turn(base: str, conversation_id: str) -> float:
    started = time.perf_counter()
    url = f"{base}/api/toolcalling/conversations/{conversation_id}/messages/"
    with httpx2.Client(auth=AUTH, timeout=900) as client:
        with client.stream("POST", url, json={"content": QUESTION}, headers=SSE) as response:
            assert response.status_code == 200, response.read()
            ended = False
            for line in response.iter_lines():
                if line.startswith("event: turn_end"):
                    ended = True
                    break
            assert ended, "the stream closed before its turn_end"
    return time.perf_counter() - started


def bare_stream(base_url: str) -> float:
    """The same answer read with the SDK alone: what reading the model's stream costs at all."""
    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=900)
    started = time.perf_counter()
    stream = client.chat.completions.create(
        model="bench-model", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text, "the bare stream carried no text"
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-bare", action="store_true", help="leave out the bare SDK stream (slow at 2 MB)")
    parser.add_argument("--piece", type=int, default=0, help="characters per streamed chunk (default: the API's few)")
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user(AUTH[0], password=AUTH[1])
    # Each turn has a conversation of its own, so every turn sends the same short history.
    fresh = [str(Conversation.objects.create(user=user, assistant_id="helper").pk) for _ in range(2 * options.rounds)]
    with model_server(answer_bytes=options.size, piece=options.piece) as base_url:
        with site(base_url, keep_alive=900) as served:
            as_json, streamed, bare = [], [], []
            for _ in range(options.rounds):  # interleaved, so a busy moment of the machine hits each
                as_json.append(json_turn(served.base, fresh.pop()))
                streamed.append(streamed_turn(served.base, fresh.pop()))
                if not options.no_bare:
                    bare.append(bare_stream(base_url))
    stored = {len(m.content) for m in Message.objects.filter(role="assistant")}
    assert stored == {options.size}, f"an answer was not stored whole: {stored}"
    piece = options.piece or CONTENT_PIECE
    chunks = -(-options.size // piece)
    print(f"uvicorn, an answer of {options.size:,} characters in {chunks:,} chunks, median of {options.rounds} turns")
    json_s, streamed_s = statistics.median(as_json), statistics.median(streamed)
    print(f"JSON turn:                    {json_s:8.2f} s")
    print(f"streamed turn:                {streamed_s:8.2f} s")
    print(f"ratio streamed / JSON:        {streamed_s / json_s:8.2f}")
    if bare:
        print(f"bare SDK stream:              {statistics.median(bare):8.2f} s")
        print(f"ratio streamed / bare stream: {streamed_s / statistics.median(bare):8.2f}")


if __name__ == "__main__":
    main()
