"""A stateful property test: random interleavings of everything that can happen to conversations — turns posted
plainly, streamed or in the background, renames, deletes, decisions, cancels, stops, task redeliveries, workers
that die, turns that die and are taken over, a usage limit running out — against the strict model server. After
every step it checks that no conversation was corrupted (see ``check``)."""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections import Counter as Tally
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from rest_framework.test import APIClient

from tests.approvalapp.models import Counter
from toolcalling import approval
from toolcalling.approval._runs import start_run
from toolcalling.model_apis import ModelReply, RequestedCall, Usage
from toolcalling.models import Conversation, Message, ToolCall, UsageCounter
from toolcalling.storage import Ledger, claim
from toolcalling.testing import Reply
from toolcalling.testing import ToolCall as ScriptedCall
from toolcalling.testutils import override_model

from .conftest import answers_per_call, history_problems, post_turn

SCRIPTS = ["plain", "add", "bump", "mixed", "dup", "noid", "malformed", "error", "surrogate"]
INTERFERENCES = [None, "rename", "delete", "takeover", "approve_other", "reject_other", "stop"]
# The machine's user may have the model ask for this many tool calls a day; a run of 30 steps often reaches it,
# before a message (refused) or within a turn (which then fails).
TOOL_CALL_LIMIT = 5
LIMITS = [{"tool_calls": TOOL_CALL_LIMIT, "per": "user", "period": "day"}]
FINAL = {"succeeded", "failed", "rejected", "cancelled", "expired"}
PENDING = {"awaiting_approval", "approved", "running"}
STATS: Tally[str] = Tally()  # what the runs explored, printed at the end for the closing figures


class Chaos:
    """The model of the machine: it answers by the script word of the user's message, replies plainly to tool
    results, and runs the pending interference inside its next answer, while a turn is in flight."""

    model_name = "chaos"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.interference: Any = None
        self.rejected: list[list[str]] = []
        self.ids = itertools.count()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            action, self.interference = self.interference, None
        if action is not None:
            action()
            connections.close_all()  # this server thread's connection
        last = body["messages"][-1]
        if last["role"] != "user":
            return Reply(content="Noted.")
        script = str(last["content"]).split()[0]
        n = next(self.ids)
        return {
            "plain": lambda: Reply(content="Hello."),
            "add": lambda: Reply(tool_calls=[ScriptedCall("add", '{"a": 2, "b": 3}')]),
            "bump": lambda: Reply(tool_calls=[ScriptedCall("bump", json.dumps({"name": f"sm{n}"}))]),
            "mixed": lambda: Reply(
                tool_calls=[
                    ScriptedCall("add", '{"a": 1, "b": 1}'),
                    ScriptedCall("bump", json.dumps({"name": f"sm{n}"})),
                ]
            ),
            "dup": lambda: Reply(
                tool_calls=[ScriptedCall("add", '{"a": 1, "b": 2}', id="d"), ScriptedCall("whoami", "{}", id="d")]
            ),
            "noid": lambda: Reply(tool_calls=[ScriptedCall("add", '{"a": 4, "b": 4}', id="")]),
            "malformed": lambda: Reply(raw=b"<html>bad gateway</html>", headers={"content-type": "text/html"}),
            "error": lambda: Reply(status=500, headers={"x-should-retry": "false"}),
            "surrogate": lambda: Reply(content="half \ud800 a pair"),
        }[script]()

    def on_rejected(self, body: Any, errors: list[str]) -> None:
        self.rejected.append(errors)


class ConversationMachine(RuleBasedStateMachine):
    conversations = Bundle("conversations")

    def __init__(self) -> None:
        super().__init__()
        # Each run starts from an empty site, so a run replays the same way when hypothesis shrinks it.
        Conversation.objects.all().delete()
        Counter.objects.all().delete()
        UsageCounter.objects.all().delete()
        self.chaos: Chaos = CHAOS
        self.chaos.interference = None
        self.posted: list[tuple[str, str]] = []  # (conversation id, content) of every message a turn accepted
        self.dead: set[str] = set()  # conversations whose turn we let die mid-way
        self.serial = itertools.count()

    def client(self, user: Any) -> APIClient:
        client = APIClient()
        client.force_authenticate(user)
        return client

    # Conversations and turns --------------------------------------------------------------------------

    @rule(target=conversations)
    def new_conversation(self) -> str:
        response = self.client(ALICE).post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json")
        assert response.status_code == 201, response.content
        return response.json()["id"]

    # Posting is what users do most: one rule per way of running a turn, so posts dominate the runs.
    @rule(conversation=conversations, script=st.sampled_from(SCRIPTS), interference=st.sampled_from(INTERFERENCES))
    def post_plain(self, conversation: str, script: str, interference: str | None) -> None:
        self.post(conversation, "json", script, interference)

    @rule(conversation=conversations, script=st.sampled_from(SCRIPTS), interference=st.sampled_from(INTERFERENCES))
    def post_streamed(self, conversation: str, script: str, interference: str | None) -> None:
        self.post(conversation, "stream", script, interference)

    @rule(conversation=conversations, script=st.sampled_from(SCRIPTS), interference=st.sampled_from(INTERFERENCES))
    def post_in_background(self, conversation: str, script: str, interference: str | None) -> None:
        self.post(conversation, "background", script, interference)

    def post(self, conversation: str, mode: str, script: str, interference: str | None) -> None:
        STATS[f"post:{mode}:{script}"] += 1
        if interference:
            STATS[f"interference:{interference}"] += 1
            self.chaos.interference = self.interfere(interference, conversation)
        content = f"{script} {next(self.serial)}"
        status, answer = post_turn(self.client(ALICE), conversation, content, mode)
        self.chaos.interference = None
        assert status != 500, answer
        if status in (200, 201, 202, 409, 422, 429, 502) and self.stored(conversation, content):
            self.posted.append((conversation, content))
            self.dead.discard(conversation)  # a new turn took over, if one had died
        if status == 409 and not isinstance(answer, list):
            assert answer["code"] in ("conversation_busy", "turn_interrupted"), answer
        if status == 429:
            assert answer["code"] == "usage_limit_exceeded", answer
            STATS["limit:mid_turn" if self.stored(conversation, content) else "limit:refused"] += 1

    def interfere(self, kind: str, conversation: str) -> Any:
        def run() -> None:
            if kind == "rename":
                response = self.client(ALICE).patch(f"/api/toolcalling/conversations/{conversation}/", {"title": "t"})
                assert response.status_code in (200, 404)
            elif kind == "delete":
                assert self.client(ALICE).delete(f"/api/toolcalling/conversations/{conversation}/").status_code in (
                    204,
                    404,
                )
            elif kind == "stop":  # the user presses Stop while the model answers
                response = self.client(ALICE).post(f"/api/toolcalling/conversations/{conversation}/stop/")
                assert response.status_code in (202, 404, 409), response.content
            elif kind == "takeover":
                Conversation.objects.filter(pk=conversation).update(updated_at=timezone.now() - timedelta(hours=1))
                content = f"plain {next(self.serial)}"
                status, _ = post_turn(self.client(ALICE), conversation, content, "json")
                if status == 201:
                    self.posted.append((conversation, content))
            else:
                self.decide_any(kind.removesuffix("_other"))

        return run

    def stored(self, conversation: str, content: str) -> bool:
        return Message.objects.filter(conversation_id=conversation, role="user", content=content).exists()

    # Decisions ----------------------------------------------------------------------------------------

    def waiting(self, conversation: str | None = None) -> ToolCall | None:
        calls = ToolCall.objects.filter(status="awaiting_approval")
        if conversation is not None:
            calls = calls.filter(conversation_id=conversation)
        return calls.order_by("id").first()

    def decide_any(self, decision: str, conversation: str | None = None) -> None:
        call = self.waiting(conversation)
        if call is None:
            return
        client = self.client(APPROVER)
        body = {"reason": "no"} if decision == "reject" else {}
        response = client.post(f"/api/toolcalling/tool-calls/{call.pk}/{decision}/", body, format="json")
        assert response.status_code in (200, 409), response.content

    @rule(conversation=conversations, decision=st.sampled_from(["approve", "reject"]))
    def decide(self, conversation: str, decision: str) -> None:
        STATS[f"decide:{decision}"] += 1
        self.decide_any(decision, conversation)

    @rule(conversation=conversations)
    def cancel(self, conversation: str) -> None:
        STATS["cancel"] += 1
        response = self.client(ALICE).post(f"/api/toolcalling/conversations/{conversation}/cancel/")
        assert response.status_code in (200, 404, 409), response.content

    @rule(conversation=conversations)
    def stop(self, conversation: str) -> None:
        """Stop between turns: nothing runs (409), or a turn died: ended now if it went quiet long enough (idle),
        else the request waits for a turn that will never hear it, until the conversation goes quiet (running)."""
        STATS["stop"] += 1
        response = self.client(ALICE).post(f"/api/toolcalling/conversations/{conversation}/stop/")
        assert response.status_code in (202, 404, 409), response.content
        if response.status_code == 202:
            assert conversation in self.dead, "a stop found a running turn, but none runs"
            if response.json()["status"] == "idle":
                STATS["stop:took_over"] += 1
                self.dead.discard(conversation)

    @rule(conversation=conversations)
    def rename(self, conversation: str) -> None:
        response = self.client(ALICE).patch(f"/api/toolcalling/conversations/{conversation}/", {"title": "renamed"})
        assert response.status_code in (200, 404)

    @rule(conversation=conversations)
    def delete(self, conversation: str) -> None:
        STATS["delete"] += 1
        assert self.client(ALICE).delete(f"/api/toolcalling/conversations/{conversation}/").status_code in (204, 404)
        self.dead.discard(conversation)

    # Workers: a queued task, its delivery, its redelivery, a worker that dies -------------------------------

    @rule(conversation=conversations)
    def approved_task_queued(self, conversation: str) -> None:
        """An approval whose task sits in the queue (approve() without the delivery)."""
        call = self.waiting(conversation)
        if call is not None:
            STATS["task:queued"] += 1
            ToolCall.objects.filter(pk=call.pk, status="awaiting_approval").update(
                status="approved", decided_by=APPROVER, decided_at=timezone.now()
            )

    @precondition(lambda self: ToolCall.objects.filter(status__in=["approved", "running"]).exists())
    @rule(delivery=st.sampled_from(["runs", "dies_before", "dies_after_effect", "redelivered"]))
    def deliver(self, delivery: str) -> None:
        call = ToolCall.objects.filter(status__in=["approved", "running"]).order_by("id").first()
        if call is None:
            return
        STATS[f"task:{delivery}"] += 1
        if delivery in ("runs", "redelivered"):
            approval.run(call.pk)  # a running call under a live lease is left alone
        elif delivery == "dies_before":
            start_run(call.pk)
        elif call.status == "approved" and start_run(call.pk) is not None:
            name = json.loads(call.raw_arguments)["name"]
            Counter.objects.update_or_create(name=name, defaults={"value": 1})  # the effect, then the worker died

    @precondition(lambda self: ToolCall.objects.filter(status__in=PENDING).exists())
    @rule()
    def sweep_later(self) -> None:
        """The periodic sweep, run as if the leases of every running call had ended."""
        STATS["sweep"] += 1
        approval.sweep(now=timezone.now() + timedelta(hours=2))

    @rule(conversation=conversations)
    def turn_dies(self, conversation: str) -> None:
        """A turn claims the conversation, stores an answer with a call, and its process dies."""
        conv = Conversation.objects.filter(pk=conversation, status__in=["idle", "failed"]).first()
        if conv is None:
            return
        token = claim(conv, from_statuses=["idle", "failed"])
        if token is None:
            return
        STATS["turn_dies"] += 1
        Ledger(conv, token).add_reply(
            ModelReply(content=None, tool_calls=[RequestedCall(id="dead", name="add", arguments="{}")], usage=Usage())
        )
        Conversation.objects.filter(pk=conv.pk).update(updated_at=timezone.now() - timedelta(hours=1))
        self.dead.add(str(conv.pk))

    # The checks, after every step ---------------------------------------------------------------------

    @invariant()
    def check(self) -> None:
        assert self.chaos.rejected == [], "the strict server refused a request"
        for conversation in Conversation.objects.all():
            key = str(conversation.pk)
            calls = {c.call_id: c for c in ToolCall.objects.filter(conversation=conversation)}
            for call_id, answers in answers_per_call(key).items():
                expected = 1 if calls[call_id].status in FINAL else 0
                assert answers == expected, f"call {call_id} ({calls[call_id].status}) has {answers} answers"
            if conversation.status in ("idle", "failed"):
                assert history_problems(key) == []
            if conversation.status == "running":
                assert key in self.dead, "a conversation is running with no live turn"
            else:
                assert conversation.stop_requested_at is None, "a stop request outlived its turn"
            for call in calls.values():
                if call.name == "bump":
                    value = Counter.objects.filter(name=call.arguments.get("name")).values_list("value", flat=True)
                    ran = value[0] if value else 0
                    assert ran <= 1, f"the approved tool of call {call.pk} ran {ran} times"
                    if call.status == "succeeded":
                        assert ran == 1
        for conversation, content in self.posted:
            if Conversation.objects.filter(pk=conversation).exists():
                assert self.stored(conversation, content), f"the user's message {content!r} was lost"
        # A model call starts only while the count is under the limit, and one answer asks for at most two calls.
        counted = UsageCounter.objects.filter(scope="user", period="day").values_list("tool_calls", flat=True)
        assert all(n <= TOOL_CALL_LIMIT + 1 for n in counted), f"the tool call limit was overrun: {list(counted)}"


CHAOS = Chaos()
ALICE: Any = None
APPROVER: Any = None


@pytest.mark.django_db(transaction=True)
def test_no_interleaving_corrupts_a_conversation(alice, approver):
    global ALICE, APPROVER
    ALICE, APPROVER = alice, approver
    with override_model(CHAOS, USAGE_LIMITS=LIMITS):
        run_state_machine_as_test(
            ConversationMachine,
            settings=settings(
                max_examples=int(os.environ.get("TOOLCALLING_STATEFUL_EXAMPLES", 25)),
                stateful_step_count=30,
                deadline=None,
                suppress_health_check=list(HealthCheck),
            ),
        )
    print("\nexplored:", dict(sorted(STATS.items())), "steps:", sum(STATS.values()))
