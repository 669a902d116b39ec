"""The Redis event stream: numbering, resume and blocking reads across connections and processes."""

import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import httpx2
import redis

from tests.services import wait_until
from toolcalling import streaming as events
from toolcalling.models import Message
from toolcalling.streaming._redis import RedisBackend
from toolcalling.testutils import override_toolcalling

from .helpers import AUTH, SSE, Stream, parse, post_streamed

ROOT = Path(__file__).resolve().parents[2]


def backend(redis_url: str, max_len: int = 100) -> RedisBackend:
    return RedisBackend(redis_url, max_len=max_len, ttl=60)


def test_events_are_numbered_per_conversation_and_resumable(redis_url):
    writer, reader = backend(redis_url), backend(redis_url)  # two connections, as two processes have
    one, two = str(uuid.uuid4()), str(uuid.uuid4())
    assert reader.last_seq(one) == 0
    published = [writer.publish(one, "delta", {"content": str(i)}) for i in range(5)]
    other = writer.publish(two, "turn_end", {"status": "idle"})
    assert [e.seq for e in published] == [1, 2, 3, 4, 5] and other.seq == 1
    assert reader.last_seq(one) == 5
    assert reader.read(one, 0, 0.01) == published
    assert reader.read(one, 3, 0.01) == published[3:]
    assert reader.read(one, 5, 0.01) == []


def test_a_blocked_reader_wakes_when_another_connection_publishes(redis_url):
    conversation = str(uuid.uuid4())
    name = f"reader-{conversation}"  # the reader's connection, as Redis's CLIENT LIST names it
    got: list[events.Event] = []
    reader = backend(f"{redis_url}?client_name={name}")
    thread = threading.Thread(target=lambda: got.extend(reader.read(conversation, 0, 30)))
    thread.start()
    admin = redis.Redis.from_url(redis_url)

    def reader_blocked() -> bool:
        return any(c["name"] == name and c["cmd"] == "xread" and "b" in c["flags"] for c in admin.client_list())

    wait_until(reader_blocked, what="the reader to block in XREAD")  # so the publish below must wake it
    backend(redis_url).publish(conversation, "message", {"id": 1, "role": "user", "content": "hi"})
    thread.join(30)
    assert [(e.seq, e.type, e.data["content"]) for e in got] == [(1, "message", "hi")]


def test_a_read_may_block_longer_than_the_redis_clients_default_socket_timeout(redis_url):
    from redis._defaults import DEFAULT_SOCKET_TIMEOUT

    # The events endpoint blocks up to EVENTS_KEEPALIVE (15 s by default) between keepalives.
    assert backend(redis_url).read(str(uuid.uuid4()), 0, DEFAULT_SOCKET_TIMEOUT + 0.5) == []


def test_old_events_are_trimmed_but_numbers_go_on(redis_url):
    writer = backend(redis_url, max_len=10)
    conversation = str(uuid.uuid4())
    for i in range(300):
        writer.publish(conversation, "delta", {"content": str(i)})
    kept = writer.read(conversation, 0, 0.01)
    # MAXLEN ~ trims whole nodes only, so somewhat more than ten may stay; the newest always do.
    assert kept[-1].seq == 300 and len(kept) < 300
    assert [e.seq for e in kept] == list(range(kept[0].seq, 301))


def run_python(code: str, redis_url: str) -> str:
    """Run ``code`` in a new Python process of the test site (its own Django, its own Redis connection)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "TOOLCALLING_TEST_EVENTS_REDIS_URL": redis_url}
    prelude = "import django, json; django.setup(); from toolcalling import streaming as events; "
    out = subprocess.run([sys.executable, "-c", prelude + code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_streamed_turn_through_redis_is_readable_from_another_process(live_server, conv, redis_events, model):
    model.reply("Streamed through Redis.")
    streamed = post_streamed(live_server.url, conv.pk, "hi")
    stored = Message.objects.filter(conversation=conv).order_by("id").last()
    assert "".join(e.data["content"] for e in streamed.of("delta")) == stored.content

    out = run_python(f"print(json.dumps([e.as_json() for e in events.read({str(conv.pk)!r}, 0, 1)]))", redis_events)
    assert json.loads(out) == [e.data for e in streamed.events]


def test_an_event_published_by_another_process_reaches_a_waiting_reader(live_server, conv, redis_events):
    url = f"{live_server.url}/api/toolcalling/conversations/{conv.pk}/events/"
    # A short keepalive: the stream this reader leaves ends soon after it.
    with override_toolcalling(EVENTS_KEEPALIVE=0.1), httpx2.Client(auth=AUTH, timeout=30) as client:
        with client.stream("GET", url, headers=SSE) as response:
            lines = response.iter_lines()
            assert next(lines) == "retry: 2000"  # the reader is subscribed once the stream has begun
            payload = {"id": 7, "name": "delete_everything", "status": "approved"}
            run_python(f"events.publish({str(conv.pk)!r}, 'tool_call_decided', {payload!r})", redis_events)
            stream = parse(lines, Stream(), stop=lambda e: True)
    assert [(e.id, e.type, e.data) for e in stream.events] == [
        ("1", "tool_call_decided", {"seq": 1, "type": "tool_call_decided", **payload})
    ]
