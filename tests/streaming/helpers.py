"""Reading server-sent events from a live server with a real HTTP client, as a browser would."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2

AUTH = ("alice", "pw")
SSE = {"Accept": "text/event-stream"}


@dataclass
class SSEEvent:
    id: str | None
    type: str
    data: dict[str, Any]


@dataclass
class Stream:
    """What one SSE response carried: its events, its comments and the ``id`` lines without data."""

    events: list[SSEEvent] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    bare_ids: list[str] = field(default_factory=list)

    def of(self, type: str) -> list[SSEEvent]:
        return [e for e in self.events if e.type == type]

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]


def parse(lines: Iterator[str], stream: Stream, stop: Any = None, *, keepalives: int | None = None) -> Stream:
    """Parse SSE lines into ``stream`` (in place, so a caller keeps what arrived before an error).

    Reads to the end of the response, or until an event for which ``stop`` is true, or until the
    ``keepalives``-th keepalive comment.
    """
    fields: dict[str, str] = {}
    for line in lines:
        if line == "":
            if "data" in fields:
                event = SSEEvent(fields.get("id"), fields.get("event", "message"), json.loads(fields["data"]))
                stream.events.append(event)
                if stop is not None and stop(event):
                    return stream
            elif "id" in fields:
                stream.bare_ids.append(fields["id"])
            fields = {}
        elif line.startswith(":"):
            stream.comments.append(line[1:].strip())
            if keepalives is not None and stream.comments.count("keepalive") == keepalives:
                return stream
        else:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
    return stream


def read(response: httpx2.Response, stop: Any = None, *, keepalives: int | None = None) -> Stream:
    assert response.headers["content-type"].startswith("text/event-stream"), response.read()
    return parse(response.iter_lines(), Stream(), stop, keepalives=keepalives)


def post_streamed(base: str, conversation_id: str, content: str, **body: Any) -> Stream:
    url = f"{base}/api/toolcalling/conversations/{conversation_id}/messages/"
    with httpx2.Client(auth=AUTH, timeout=30) as client:
        with client.stream("POST", url, json={"content": content, **body}, headers=SSE) as response:
            assert response.status_code == 200, response.read()
            return read(response)


def get_events(
    base: str,
    conversation_id: str,
    *,
    after: int | None = None,
    headers: dict | None = None,
    stop: Any = None,
    keepalives: int | None = None,
) -> Stream:
    """The events endpoint's stream, read to its end (or as ``parse`` stops)."""
    url = f"{base}/api/toolcalling/conversations/{conversation_id}/events/"
    params = {} if after is None else {"after": after}
    with httpx2.Client(auth=AUTH, timeout=30) as client:
        with client.stream("GET", url, params=params, headers={**SSE, **(headers or {})}) as response:
            assert response.status_code == 200, response.read()
            return read(response, stop, keepalives=keepalives)


def is_turn_end(event: SSEEvent) -> bool:
    return event.type == "turn_end"


def follow_until(base: str, conversation_id: Any, after: int, *types: str) -> Stream:
    """Read the events endpoint until an event of each of ``types`` has arrived."""
    url = f"{base}/api/toolcalling/conversations/{conversation_id}/events/"
    wanted = set(types)

    def seen_all(event: Any) -> bool:
        wanted.discard(event.type)
        return not wanted

    with httpx2.Client(auth=AUTH, timeout=60) as client:
        with client.stream("GET", url, params={"after": after}, headers=SSE) as response:
            assert response.status_code == 200
            return parse(response.iter_lines(), Stream(), stop=seen_all)
