"""Many requests of one user at once: each from its own thread with its own database connection, released
together, and what the counters say afterwards compared with what is stored."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from celery import _state as celery_state
from django.contrib.auth import get_user_model
from django.db import connections
from django.db.models import Sum
from rest_framework.test import APIClient

from toolcalling.models import Conversation, Message, ToolCall, UsageCounter
from toolcalling.testing import Reply, Usage
from toolcalling.usage import window

URL = "/api/toolcalling/conversations/{}/messages/"
MODES = ("plain", "streamed", "background")
PER_CALL = 100  # tokens of every model answer


@pytest.fixture(autouse=True)
def eager_tasks_leave_joins_allowed() -> Iterator[None]:
    """Background turns here run as eager Celery tasks, many threads at once. Each eager task sets Celery's
    process-wide "a join would block" flag and puts back the value it found, so two at once can leave it set
    for good, and a later test's ``result.get()`` then raises "Never call result.get() within a task!"."""
    before = celery_state.task_join_will_block()
    yield
    celery_state._set_task_join_will_block(before)


class Answers:
    """A model that answers every request at once with a short text of ``PER_CALL`` tokens (thread-safe)."""

    model_name = "answers"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.rejected: list[list[str]] = []

    def __call__(self, body: dict) -> Reply:
        with self.lock:
            self.requests += 1
        return Reply("Done.", usage=Usage(PER_CALL - 10, 10))

    def on_rejected(self, body: dict, errors: list[str]) -> None:
        self.rejected.append(errors)


@dataclass
class Outcome:
    """One request's answer: its status code, the error code of a refusal, and for a stream its event types."""

    status: int
    code: str = ""
    events: list[str] = field(default_factory=list)
    detail: str = ""


def send(client: APIClient, conversation_id: Any, mode: str) -> Outcome:
    """Post a message in ``mode`` and read the whole answer (a stream to its end)."""
    body: dict[str, Any] = {"content": f"a message in {mode} mode"}
    headers: dict[str, str] = {}
    if mode == "background":
        body["background"] = True
    if mode == "streamed":
        headers["HTTP_ACCEPT"] = "text/event-stream"
    response = client.post(URL.format(conversation_id), body, format="json", **headers)
    if getattr(response, "streaming", False):
        text = b"".join(response.streaming_content).decode()
        events = [line.removeprefix("event: ") for line in text.splitlines() if line.startswith("event: ")]
        return Outcome(response.status_code, events=events)
    body = response.json() if response.status_code >= 400 else {}
    return Outcome(response.status_code, code=body.get("code", ""), detail=str(body.get("detail", "")))


def at_once(count: int, work: Callable[[int], Outcome]) -> list[Outcome]:
    """Run ``work(i)`` for ``i < count`` in threads released together; each closes its connections after."""
    barrier = threading.Barrier(count)
    outcomes: list[Outcome | BaseException | None] = [None] * count

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=60)  # a bound for a broken test: all threads start within moments
            outcomes[index] = work(index)
        except BaseException as exc:  # noqa: BLE001 (reported below, with the others)
            outcomes[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,), name=f"race-{i}") for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a request never ended"
    errors = [o for o in outcomes if not isinstance(o, Outcome)]
    assert not errors, errors
    return [o for o in outcomes if isinstance(o, Outcome)]


def tally(outcomes: list[Outcome]) -> dict[str, int]:
    """How many answers had each status (and code): what an assertion about them shows when it fails."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        name = f"{outcome.status} {outcome.code} {outcome.detail if outcome.status >= 500 else ''}".strip()
        counts[name] = counts.get(name, 0) + 1
    return counts


def client_for(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def conversations_of(user: Any, count: int, assistant: str = "helper") -> list[Any]:
    return [Conversation.objects.create(user=user, assistant_id=assistant).pk for _ in range(count)]


def modes_for(mode: str, count: int) -> list[str]:
    """The mode of each request: one mode for all, or ``mixed``: the modes in turn."""
    return [MODES[i % len(MODES)] if mode == "mixed" else mode for i in range(count)]


def reconcile(user: Any, assistant: str = "helper") -> dict[str, int]:
    """Assert that every counter of ``user`` and ``assistant`` equals what is stored, and that no conversation
    is left ``running``; returns the stored totals."""
    messages = Message.objects.filter(conversation__user=user)
    stored = {
        "turns": messages.filter(role=Message.Role.USER).count(),
        "tokens": messages.aggregate(total=Sum("total_tokens"))["total"] or 0,
        "tool_calls": ToolCall.objects.filter(conversation__user=user).count(),
    }
    conversations = Conversation.objects.filter(user=user)
    assert (conversations.aggregate(total=Sum("total_tokens"))["total"] or 0) == stored["tokens"]
    assert not conversations.filter(status=Conversation.Status.RUNNING).exists()
    for scope, key in (("user", str(user.pk)), ("assistant", assistant)):
        for period in ("day", "month"):
            row = UsageCounter.objects.get(scope=scope, key=key, period=period, period_start=window(period)[0])
            counted = {"turns": row.turns, "tokens": row.tokens, "tool_calls": row.tool_calls}
            assert counted == stored, (scope, period, counted, stored)
    return stored


def new_user(name: str) -> Any:
    return get_user_model().objects.create_user(name, password="pw")
