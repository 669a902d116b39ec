"""Streamed turns under the WSGI live server, read with a real HTTP client."""

import threading

import httpx2
import pytest

from toolcalling.models import Conversation, Message, ToolCall

from .helpers import AUTH, SSE, Stream, get_events, is_turn_end, parse, post_streamed


def assert_well_formed(stream: Stream) -> None:
    """Every event has a type and the per-conversation sequence number, as its SSE id, increasing."""
    seqs = [e.data["seq"] for e in stream.events]
    assert seqs == sorted(set(seqs)), seqs
    assert all(e.id == str(e.data["seq"]) and e.data["type"] == e.type for e in stream.events)
    assert not any("arguments" in e.data for e in stream.events)
    for event in stream.of("awaiting_approval"):
        assert all("arguments" not in c for c in event.data["tool_calls"])


@pytest.mark.each_api
def test_streamed_turn_is_exactly_what_is_stored(live_server, model, conv):
    model.call("add", {"a": 2, "b": 3})
    model.reply("The sum of two and three is five.")
    stream = post_streamed(live_server.url, conv.pk, "What is 2 + 3?")

    assert_well_formed(stream)
    assert stream.types[0] == "message" and stream.types[-1] == "turn_end"
    assert stream.events[-1].data["status"] == "idle"
    assert stream.of("tool_call_started")[0].data["name"] == "add"
    finished = stream.of("tool_call_finished")[0].data
    assert (finished["name"], finished["status"]) == ("add", "succeeded")
    stored = list(Message.objects.filter(conversation=conv).order_by("id"))
    assert [e.data["id"] for e in stream.of("message")] == [m.pk for m in stored]
    assert [e.data["role"] for e in stream.of("message")] == ["user", "assistant", "tool", "assistant"]
    final = stored[-1]
    assert "".join(e.data["content"] for e in stream.of("delta")) == final.content
    assert stream.of("message")[-1].data["content"] == final.content
    assert len(stream.of("delta")) > 1  # the strict server cuts text into pieces
    assert all(request.get("stream") is True for request in model.requests)
    model.assert_done()


@pytest.mark.each_api
def test_several_calls_per_answer_with_arguments_in_pieces_are_assembled(live_server, model, conv):
    address = {"street": "1 Long Street Name", "city": "Springfield"}
    answer = model.calls(
        ("add", {"a": 12345, "b": 67890}),
        ("ship", {"order_no": "20250719-0032", "speed": "express", "address": address}),
        content="Checking both.",
    )
    model.reply("Done.")
    stream = post_streamed(live_server.url, conv.pk, "Add and ship")

    calls = list(ToolCall.objects.filter(conversation=conv).order_by("index"))
    assert [(c.name, c.arguments, c.status) for c in calls] == [
        ("add", {"a": 12345, "b": 67890}, "succeeded"),
        ("ship", {"order_no": "20250719-0032", "speed": "express", "address": address}, "succeeded"),
    ]
    assert [c.call_id for c in calls] == [c.id for c in answer.tool_calls]
    first_answer = stream.of("message")[1].data
    assert first_answer["content"] == "Checking both."
    assert [c["name"] for c in first_answer["tool_calls"]] == ["add", "ship"]
    assert [e.data["name"] for e in stream.of("tool_call_finished")] == ["add", "ship"]
    deltas = "".join(e.data["content"] for e in stream.of("delta"))
    assert deltas == "Checking both." + "Done."
    model.assert_done()


def test_busy_and_invalid_requests_stay_json(live_server, model, conv):
    url = f"{live_server.url}/api/toolcalling/conversations/{conv.pk}/messages/"
    with httpx2.Client(auth=AUTH, timeout=10) as client:
        invalid = client.post(url, json={"content": "  "}, headers=SSE)
        assert invalid.status_code == 400
        assert invalid.headers["content-type"] == "application/json"
        assert "blank" in invalid.json()["content"][0]
        Conversation.objects.filter(pk=conv.pk).update(status="awaiting_approval")
        busy = client.post(url, json={"content": "hi"}, headers=SSE)
        assert busy.status_code == 409
        assert busy.headers["content-type"] == "application/json"
        assert busy.json()["code"] == "conversation_busy"
    assert not Message.objects.filter(conversation=conv).exists()


@pytest.mark.each_api
def test_a_failing_model_ends_the_stream_with_an_error(live_server, model, conv):
    model.error(500, "The engine is on fire.")
    stream = post_streamed(live_server.url, conv.pk, "hello")
    assert_well_formed(stream)
    assert stream.types[-2:] == ["error", "turn_end"]
    assert "engine is on fire" in stream.events[-2].data["detail"]
    assert stream.events[-2].data["code"] == "model_error"  # the error body's code, for clients that branch on it
    assert stream.events[-1].data["status"] == "failed"
    conv.refresh_from_db()
    assert conv.status == "failed"


@pytest.mark.each_api
def test_a_gated_call_streams_the_waiting_state(live_server, model, conv):
    model.call("delete_everything", {"confirm": "yes"})
    stream = post_streamed(live_server.url, conv.pk, "Delete it all")
    assert_well_formed(stream)
    waiting = stream.of("awaiting_approval")[0].data["tool_calls"]
    assert [(c["name"], c["status"]) for c in waiting] == [("delete_everything", "awaiting_approval")]
    assert stream.events[-1].data["status"] == "awaiting_approval"


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.1)  # the streams left behind end soon after their readers
def test_a_reader_that_hangs_up_loses_nothing(live_server, model, conv):
    gate = threading.Event()
    model.call("add", {"a": 1, "b": 1})

    def slow_answer(body):
        gate.wait(30)
        return "One and one make two."

    model.respond(slow_answer)
    url = f"{live_server.url}/api/toolcalling/conversations/{conv.pk}/messages/"
    seen = Stream()
    with httpx2.Client(auth=AUTH, timeout=30) as client:
        with client.stream("POST", url, json={"content": "1+1?"}, headers=SSE) as response:
            parse(response.iter_lines(), seen, stop=lambda e: e.type == "tool_call_finished")
    gate.set()  # the model answers only after the reader has gone

    last = int(seen.events[-1].id)
    # Read until the turn's end, however long the model takes to answer once released.
    rest = get_events(live_server.url, conv.pk, headers={"Last-Event-ID": str(last)}, stop=is_turn_end)
    assert rest.bare_ids == [str(last)]
    assert rest.events[0].data["seq"] == last + 1
    assert rest.types[-1] == "turn_end"
    final = Message.objects.filter(conversation=conv).order_by("id").last()
    assert "".join(e.data["content"] for e in rest.of("delta")) == final.content == "One and one make two."
    # The whole stream again from the start, with ?after=0, is the two parts joined.
    everything = get_events(live_server.url, conv.pk, after=0, stop=is_turn_end)
    assert [e.data for e in everything.events[: len(seen.events)]] == [e.data for e in seen.events]
    assert [e.data["seq"] for e in everything.events] == list(range(1, rest.events[-1].data["seq"] + 1))


# Keepalives and the idle timeout are tested apart, each with the other far away, so neither depends on how
# fast this machine serves the stream; test_sse.py checks how they interleave with a clock of its own.
@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.1)
def test_a_quiet_events_stream_sends_keepalives(live_server, model, conv):
    stream = get_events(live_server.url, conv.pk, keepalives=2)
    assert stream.bare_ids == ["0"]
    assert stream.events == []
    assert stream.comments == ["keepalive", "keepalive"]


@pytest.mark.toolcalling(EVENTS_IDLE_TIMEOUT=0.3, EVENTS_KEEPALIVE=60)
def test_a_quiet_events_stream_closes_when_idle(live_server, model, conv):
    stream = get_events(live_server.url, conv.pk)  # to the end of the response: the server closes it
    assert stream.bare_ids == ["0"]
    assert stream.events == []
    assert stream.comments == []  # no keepalive was due yet


def test_events_endpoint_refuses_bad_ids_and_other_users(live_server, model, conv, bob):
    url = f"{live_server.url}/api/toolcalling/conversations/{conv.pk}/events/"
    with httpx2.Client(auth=AUTH, timeout=10) as client:
        bad = client.get(url, params={"after": "x"}, headers=SSE)
        assert bad.status_code == 400 and bad.headers["content-type"] == "application/json"
        theirs = Conversation.objects.create(user=bob, assistant_id="helper")
        other = client.get(f"{live_server.url}/api/toolcalling/conversations/{theirs.pk}/events/", headers=SSE)
        assert other.status_code == 404
    with httpx2.Client(timeout=10) as anonymous:
        assert anonymous.get(url, headers=SSE).status_code in (401, 403)
