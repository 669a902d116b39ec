"""``streaming.follow`` on a clock of its own: when keepalives are sent and when a quiet stream closes, exactly.

The HTTP tests check each behaviour apart with the other far away; here they interleave, with no wall-clock
time involved. Times are binary fractions, so the clock's arithmetic is exact.
"""

import pytest

from toolcalling.streaming import Event, Follower
from toolcalling.streaming import _sse as sse
from toolcalling.streaming import _store as store
from toolcalling.testutils import override_toolcalling


class Clock:
    """``time.monotonic`` for ``sse``, moved only by the fake reads below."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def scripted_stream(monkeypatch):
    """Makes ``events.read`` serve events at scripted times; a read with nothing due waits its whole timeout."""
    clock = Clock()
    due: dict[float, Event] = {}

    def read(conversation_id, after, timeout):
        at = min((t for t in due if clock.now < t <= clock.now + timeout), default=None)
        if at is None:
            clock.now += timeout
            return []
        clock.now = at
        return [due.pop(at)]

    monkeypatch.setattr(sse, "time", clock)
    monkeypatch.setattr(store, "read", read)
    return clock, due


def delta(seq: int) -> Event:
    return Event(seq=seq, type="delta", data={"content": "x"})


def test_keepalives_do_not_keep_a_quiet_stream_open(scripted_stream):
    clock, _ = scripted_stream
    with override_toolcalling(EVENTS_KEEPALIVE=0.25):
        sent = list(sse.follow("c", Follower(0, idle_timeout=1.0)))
    assert sent == [sse.format_start(0)] + [sse.KEEPALIVE] * 3  # at 0.25, 0.5 and 0.75
    assert clock.now == 1.0  # closed when idle, keepalives or not


def test_an_event_starts_the_idle_time_and_the_keepalive_interval_again(scripted_stream):
    clock, due = scripted_stream
    due[0.625] = delta(1)
    with override_toolcalling(EVENTS_KEEPALIVE=0.25):
        sent = list(sse.follow("c", Follower(0, idle_timeout=1.0)))
    # Keepalives at 0.25 and 0.5, the event at 0.625, keepalives 0.25 apart after it, closed 1.0 after it.
    assert sent == [sse.format_start(0), sse.KEEPALIVE, sse.KEEPALIVE, sse.format_event(delta(1))] + [sse.KEEPALIVE] * 3
    assert clock.now == 1.625
