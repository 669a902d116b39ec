"""Streamed turns and the events endpoint under an ASGI server (uvicorn), read with a real HTTP client."""

import socket
import sys
import threading
import traceback
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
import uvicorn

from tests.services import wait_until
from toolcalling.models import Conversation, Message
from toolcalling.testing import Reply

from .helpers import AUTH, SSE, get_events, post_streamed, read


@pytest.fixture
def asgi_url(transactional_db) -> Iterator[str]:
    from tests.asgi import application

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            application, host="127.0.0.1", port=port, log_level="warning", lifespan="off", timeout_graceful_shutdown=2
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()

    def started() -> bool:
        assert thread.is_alive(), "uvicorn stopped before it started"
        return server.started

    wait_until(started, timeout=10, what="uvicorn")
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_streamed_turn_under_asgi_is_what_is_stored(asgi_url, model, conv):
    model.call("whoami", {})
    model.reply("You are alice, of acme.")
    stream = post_streamed(asgi_url, conv.pk, "Who am I?")

    seqs = [e.data["seq"] for e in stream.events]
    assert seqs == sorted(set(seqs)) and [e.id for e in stream.events] == [str(s) for s in seqs]
    assert stream.types[-1] == "turn_end" and stream.events[-1].data["status"] == "idle"
    stored = list(Message.objects.filter(conversation=conv).order_by("id"))
    assert [e.data["id"] for e in stream.of("message")] == [m.pk for m in stored]
    assert "".join(e.data["content"] for e in stream.of("delta")) == stored[-1].content
    model.assert_done()


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.1)
def test_events_endpoint_under_asgi_resumes_then_keeps_the_stream_alive(asgi_url, model, conv):
    model.reply("Hello there, alice.")
    streamed = post_streamed(asgi_url, conv.pk, "hi")
    replay = get_events(asgi_url, conv.pk, headers={"Last-Event-ID": "1"}, keepalives=1)
    assert [e.data for e in replay.events] == [e.data for e in streamed.events[1:]]
    assert replay.comments == ["keepalive"]


@pytest.mark.toolcalling(EVENTS_IDLE_TIMEOUT=0.3, EVENTS_KEEPALIVE=60)
def test_events_endpoint_under_asgi_closes_when_idle(asgi_url, model, conv):
    stream = get_events(asgi_url, conv.pk)  # to the end of the response: the server closes it
    assert (stream.bare_ids, stream.events, stream.comments) == (["0"], [], [])


def test_busy_is_json_under_asgi(asgi_url, model, conv):
    conv.status = "running"
    conv.save()
    url = f"{asgi_url}/api/toolcalling/conversations/{conv.pk}/messages/"
    with httpx2.Client(auth=AUTH, timeout=10) as client:
        busy = client.post(url, json={"content": "hi"}, headers=SSE)
    assert busy.status_code == 409 and busy.json()["code"] == "conversation_busy"


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.2)
def test_background_turn_is_accepted_and_followed_under_asgi(asgi_url, model, conv):
    model.reply("Done in the background.")
    url = f"{asgi_url}/api/toolcalling/conversations/{conv.pk}/messages/"
    with httpx2.Client(auth=AUTH, timeout=10) as client:
        accepted = client.post(url, json={"content": "later", "background": True})
        assert accepted.status_code == 202, accepted.text
        body = accepted.json()
        with client.stream("GET", body["events"], headers=SSE) as response:
            stream = read(response, stop=lambda e: e.type == "turn_end")
    assert stream.of("message")[-1].data["content"] == "Done in the background."


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=20.0, EVENTS_IDLE_TIMEOUT=60.0)
def test_idle_event_streams_do_not_hold_up_a_streamed_turn_under_asgi(asgi_url, model, conv, alice):
    """Far more idle readers than the server's thread pool has threads: a streamed turn still goes through
    before any of them needs its first keepalive (an idle reader waits on the event loop, not in a thread)."""
    idle = [Conversation.objects.create(user=alice, assistant_id="helper") for _ in range(24)]
    opened = threading.Barrier(len(idle) + 1)
    seen: list[list[str]] = [[] for _ in idle]
    stop = threading.Event()

    def listen(index: int, conversation_id: str) -> None:
        url = f"{asgi_url}/api/toolcalling/conversations/{conversation_id}/events/"
        with httpx2.Client(auth=AUTH, timeout=120) as client:
            try:
                with client.stream("GET", url, headers=SSE) as response:
                    lines = response.iter_lines()
                    seen[index].append(next(lines))  # the opening "retry:" line: this reader is waiting now
                    opened.wait()
                    for line in lines:
                        seen[index].append(line)
            except httpx2.HTTPError:
                assert stop.is_set(), "an idle stream broke while the test still needed it"  # the server stopped

    readers = [threading.Thread(target=listen, args=(n, c.pk), daemon=True) for n, c in enumerate(idle)]
    for reader in readers:
        reader.start()
    opened.wait(timeout=60)
    model.reply("Still quick.")
    stream = post_streamed(asgi_url, conv.pk, "hi")
    stop.set()
    assert stream.types[-1] == "turn_end"
    # Every idle reader is still in its first quiet stretch: none has needed a keepalive yet.
    assert all(not any("keepalive" in line for line in lines) for lines in seen)


def model_waits_in_threads() -> list[str]:
    """The threads of this process that are inside a model API's sync ``send``: each would be a thread a
    waiting turn holds (the strict server answering in this process is not a model API's code)."""
    here = []
    for thread_id, frame in sys._current_frames().items():
        stack = traceback.extract_stack(frame)
        if any("/toolcalling/model_apis/" in f.filename and f.name == "send" for f in stack):
            here.append(str(thread_id))
    return here


def post_json(base: str, conversation_id: Any, content: str) -> httpx2.Response:
    url = f"{base}/api/toolcalling/conversations/{conversation_id}/messages/"
    with httpx2.Client(auth=AUTH, timeout=30) as client:
        return client.post(url, json={"content": content})


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "json"])
def test_turns_under_asgi_wait_for_the_model_holding_no_thread(asgi_url, model, alice, streamed):
    """Several turns at once, streamed or answered as JSON: while every one of them waits for the model (their
    requests all at the server together), no thread of the process is waiting in a model API's ``send``."""
    turns = 6
    conversations = [Conversation.objects.create(user=alice, assistant_id="helper") for _ in range(turns)]
    all_asked = threading.Barrier(turns + 1, timeout=30)
    seen_during_wait: list[list[str]] = []

    def answer(body):
        all_asked.wait()  # every turn's request is in flight
        all_asked.wait()  # the test has looked at the threads
        return Reply(content="Answered.")

    for _ in range(turns):
        model.respond(answer)
    results: list[Any] = [None] * turns

    def post(index: int) -> None:
        pk = conversations[index].pk
        results[index] = post_streamed(asgi_url, pk, "hi") if streamed else post_json(asgi_url, pk, "hi")

    posters = [threading.Thread(target=post, args=(n,)) for n in range(turns)]
    for poster in posters:
        poster.start()
    all_asked.wait()
    seen_during_wait.append(model_waits_in_threads())
    all_asked.wait()
    for poster in posters:
        poster.join(30)
    assert seen_during_wait == [[]]
    if streamed:
        assert [r.types[-1] for r in results] == ["turn_end"] * turns
    else:
        assert [r.status_code for r in results] == [201] * turns
        assert [[m["content"] for m in r.json()["messages"]] for r in results] == [["hi", "Answered."]] * turns
    assert Conversation.objects.filter(pk__in=[c.pk for c in conversations], status="idle").count() == turns


def test_a_json_turn_under_asgi_answers_as_under_wsgi(asgi_url, model, conv, alice):
    """The JSON answer rendered when the turn has ended: its messages are the stored ones, a waiting call is
    listed, a failing model is the API's error, and a busy conversation is a 409 before anything runs."""
    model.call("delete_everything", {"confirm": "yes"})
    answered = post_json(asgi_url, conv.pk, "Delete it all")
    assert answered.status_code == 201, answered.text
    body = answered.json()
    stored = list(Message.objects.filter(conversation=conv).order_by("id").values_list("pk", flat=True))
    assert [m["id"] for m in body["messages"]] == stored
    assert body["status"] == "awaiting_approval" and [c["name"] for c in body["awaiting_approval"]] == [
        "delete_everything"
    ]
    other = Conversation.objects.create(user=alice, assistant_id="helper")
    model.error(500, "down")
    failed = post_json(asgi_url, other.pk, "again")
    assert failed.status_code == 502 and failed.json()["code"] == "model_error", failed.text
    assert failed.json()["status"] == "failed" == Conversation.objects.get(pk=other.pk).status
    busy = post_json(asgi_url, conv.pk, "and again")  # it awaits a decision
    assert busy.status_code == 409 and busy.json()["code"] == "conversation_busy"
    model.assert_done()
