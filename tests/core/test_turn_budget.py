"""The cost budget of a turn: the SQL statements and the function calls each of a fixed set of turns makes, held
to the budgets recorded in ``turn_budget.json`` beside this file. Not a timing: both counts are the same from run
to run for the same code, so a change that adds work to a turn fails here until its commit raises the budget and
says why.

Counted for the turn alone (its set-up is not), after an identical turn has warmed the process up (imports,
connections, caches, the period's usage counter rows), both on a thread the test starts for its turns: the
statements sent on that thread's connection to the default database, and the functions it calls
(``sys.setprofile`` is per thread, so the strict model server's threads are not counted), with the garbage
collector off so that no finaliser runs inside the count.

Each pass of ``make test`` (a database and a model API) holds its own budgets. Statements are held exactly. Calls
repeat exactly but for up to some twenty (the order in which Django's query compiler walks a set of join aliases
follows the process's hash seed): more than ``ABOVE`` over the budget fails, and more than ``BELOW`` under it
fails too, asking to lower the budget so the gain is kept. Recording (docs/development.md)::

    TOOLCALLING_RECORD_BUDGET=1 TOOLCALLING_BUDGET_WHY="what raised it" python -m pytest tests/core/test_turn_budget.py

rewrites this pass's numbers and keeps the other passes'. A budget that rises, or a new one, takes the reason.
On a pass of ``make test`` with ``CI=true``, a scenario without a budget fails instead of being skipped.

One scenario is the REST API around a turn: ``POST conversations/{id}/messages/`` of the same one-call turn, run
in the request (not streamed). Beside its own budget it is held to issue 35's target for the view: at most
``VIEW_OVER_RUN`` times the calls of ``Assistant.run`` running that turn in a conversation made before, the two
counted in the same run (a ratio of two counts that repeat, not a timing). The request is counted as a server
runs it: its WSGI environ given to Django's ``WSGIHandler`` (the site's middleware, the URL resolver, DRF's
dispatch and authentication, the view, the body read and closed, ``request_finished``). Not through Django's
test client: it adds work no server does (building the request from arguments, catching rendered templates, its
cookie jar), and DRF's ``force_authenticate`` skips authentication and gives every request the same user object,
whose permission cache the request before filled, so the turn's two permission reads drop out of the count. Here
the user is loaded afresh for each turn, as on every real request: by the request's authentication, and for
``Assistant.run`` before its count, as a task or a command loads it. The request authenticates with a DRF token,
as an API client sending this JSON POST does (one SELECT of the token with its user); the chat page posts with
its session and CSRF token, but streams the answer. Connections are kept (``CONN_MAX_AGE`` None, as production
sites set it), so the handler's ``close_old_connections`` at either end of the request closes nothing and the
count is the request's, not a reconnection's.
"""

from __future__ import annotations

import gc
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import django
import h11
import httpcore2
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from opentelemetry import trace
from rest_framework.authtoken.models import Token

from tests.services import on_ci
from toolcalling import Assistant, approval, streaming
from toolcalling.engine import Turn
from toolcalling.models import Conversation, ToolCall
from toolcalling.streaming import _deltas
from toolcalling.testing import ScriptedModel

# The function calls a turn makes depend on the interpreter and Django too: each line of make test holds its own
# budgets. The 5.2 LTS line's are turn_budget.json, another line's turn_budget.<line>.json.
LINE = f"python{sys.version_info.major}.{sys.version_info.minor}-django{django.VERSION[0]}.{django.VERSION[1]}"
REFERENCE_LINE = "python3.11-django5.2"
BUDGET_FILE = Path(__file__).with_name("turn_budget.json" if LINE == REFERENCE_LINE else f"turn_budget.{LINE}.json")
ABOVE = 0.01  # calls more than 1 % over their budget fail: 180 to 370 calls (one more ORM query costs some 600)
BELOW = 0.05  # calls more than 5 % under their budget fail too: lower the budget, keep the gain
NOISE = 0.002  # calls vary by less from run to run: recording keeps the old number within it
RECORD = os.environ.get("TOOLCALLING_RECORD_BUDGET") == "1"
WHY = os.environ.get("TOOLCALLING_BUDGET_WHY", "").strip()
MEASURED_TO = os.environ.get("TOOLCALLING_BUDGET_OUT")  # bench/turn_cost.py reads the counts from here
# The Makefile's passes (database, model API) on each line.
LINE_PASSES = {
    REFERENCE_LINE: [("sqlite", "chat_completions"), ("postgresql", "responses"), ("mariadb", "anthropic")],
    "python3.13-django6.1": [("sqlite", "chat_completions")],
}
PASSES = LINE_PASSES.get(LINE, [])
HISTORY_TURNS = 20
VIEW_OVER_RUN = 1.3  # issue 35: the REST API's POST of a turn, at most 1.3x the calls of Assistant.run's same turn
TRANSPORT = tuple(os.path.dirname(str(package.__file__)) + os.sep for package in (httpcore2, h11))


@dataclass(frozen=True)
class Cost:
    statements: int
    python_calls: int


class CallCounter:
    """A profile function counting the functions called: Python's (``call``, a generator resumed included) and
    the built-in ones (``c_call``: ``len``, ``json.dumps``'s encoder, a cursor's ``execute``).

    A call into the HTTP transport (``httpcore2``, ``h11``) counts as one, with nothing it calls: the model
    server writes each streamed event as it goes, and how many socket reads an answer takes, each some two
    dozen calls in there, depends on the clock. What the SDK and the app do with the answer is counted."""

    def __init__(self) -> None:
        self.calls = 0
        self.inside: FrameType | None = None  # the transport's frame being run, while one is

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if self.inside is not None:
            if event == "return" and frame is self.inside:  # a generator's yield returns too
                self.inside = None
        elif event == "call":
            self.calls += 1
            if frame.f_code.co_filename.startswith(TRANSPORT):
                self.inside = frame
        elif event == "c_call":
            self.calls += 1


@contextmanager
def counting() -> Iterator[list[Cost]]:
    """The block's statements and function calls, in the list it gives, once the block has ended."""
    found: list[Cost] = []
    counter = CallCounter()
    gc.collect()
    gc.disable()
    try:
        with CaptureQueriesContext(connection) as queries:
            sys.setprofile(counter)
            try:
                yield found
            finally:
                sys.setprofile(None)
    finally:
        gc.enable()
    # Counted with the block: the few calls of leaving it (this generator resumed, ``sys.setprofile``), the same
    # every time.
    found.append(Cost(statements=len(queries.captured_queries), python_calls=counter.calls))


def wsgi_post(path: str, data: Any, token: str) -> dict[str, Any]:
    """The WSGI environ of an API client's JSON POST authenticated with a DRF token, as a server gives it to
    Django's handler (PEP 3333)."""
    body = json.dumps(data).encode()
    return {
        "REQUEST_METHOD": "POST",
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "testserver",
        "HTTP_ACCEPT": "application/json",
        "HTTP_AUTHORIZATION": f"Token {token}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }


# The turns ------------------------------------------------------------------------------------------------
# Each scenario sets a turn up (not counted) and gives back the turn to count and a check of what it did.

Counted = tuple[Callable[[], Any], Callable[[Any], None]]


class Scenarios:
    """The turns whose cost is held, each set up afresh when asked for, on this pass's database and model API."""

    def __init__(self, model: ScriptedModel, user: Any, approver: Any, thread: ThreadPoolExecutor) -> None:
        self.thread = thread  # the one thread the turns run on, warm-up and count alike
        self.model = model
        self.user = user
        self.approver = approver
        self.assistant = Assistant.get("helper")
        self.handler = WSGIHandler()  # made once, as a server makes it when it starts: the middleware loaded
        self.token = Token.objects.create(user=user).key

    def first_turn(self) -> Counted:
        """``Assistant.run`` without a conversation: the model asks for ``add``, then answers."""
        self.model.calls(("add", {"a": 2, "b": 3}))
        self.model.reply("2 + 3 = 5")

        def check(result: Any) -> None:
            assert result.reply == "2 + 3 = 5"
            assert result.conversation.status == "idle"

        return lambda: self.assistant.run(self.user, "What is 2 + 3?"), check

    def turn_at_20(self) -> Counted:
        """The same turn in a conversation that has 20 such turns of history."""
        conversation = None
        for n in range(HISTORY_TURNS):
            self.model.calls(("add", {"a": n, "b": 1}))
            self.model.reply(f"{n} + 1 = {n + 1}")
            conversation = self.assistant.run(self.user, f"What is {n} + 1?", conversation).conversation
        self.model.calls(("add", {"a": 2, "b": 3}))
        self.model.reply("2 + 3 = 5")

        def check(result: Any) -> None:
            assert result.reply == "2 + 3 = 5"
            assert result.conversation.messages.count() == 4 * (HISTORY_TURNS + 1)

        return lambda: self.assistant.run(self.user, "What is 2 + 3?", conversation), check

    def gated_continuation(self) -> Counted:
        """A staff member approves a gated call: the call runs and the conversation continues to the model's
        answer (the tests' Celery runs both tasks in this thread, as a worker would run them in its own)."""
        self.model.call("delete_everything", {"confirm": "yes"})
        conversation = self.assistant.run(self.user, "Delete everything.").conversation
        call = ToolCall.objects.get(conversation=conversation)
        assert call.status == "awaiting_approval"
        self.model.reply("Everything is deleted.")

        def check(_: Any) -> None:
            conversation.refresh_from_db()
            assert conversation.status == "idle"
            answers = conversation.messages.order_by("id").values_list("content", flat=True)
            assert answers.last() == "Everything is deleted."
            assert ToolCall.objects.get(pk=call.pk).status == "succeeded"

        return lambda: approval.approve(call, self.approver), check

    def streamed_turn(self) -> Counted:
        """A streamed turn of a conversation made before, as a streamed POST's turn runs: built, claimed, run
        with every text piece published to the conversation's event stream."""
        conversation = Conversation.objects.create(user=self.user, assistant_id="helper")
        self.model.calls(("add", {"a": 2, "b": 3}))
        self.model.reply("The sum of two and three is five.")
        after = streaming.last_seq(conversation.pk)

        def turn() -> Any:
            streamed = Turn(self.assistant, conversation, user=self.user, stream=True)
            streamed.claim()
            return streamed.run("What is 2 + 3?", claimed=True)

        def check(messages: Any) -> None:
            assert messages[-1].content == "The sum of two and three is five."
            events = streaming.read(conversation.pk, after, 0)
            deltas = [e for e in events if e.type == "delta"]
            assert "".join(e.data["content"] for e in deltas) == messages[-1].content
            assert len(deltas) > 1
            assert all(request.get("stream") is True for request in self.model.requests[-2:])

        return turn, check

    def posted_turn(self) -> Counted:
        """The REST API's POST of a message to a conversation made before, the one-call turn run in the request
        and its new messages answered as JSON: an API client's request given to Django's WSGI handler."""
        conversation = Conversation.objects.create(user=self.user, assistant_id="helper")
        self.model.calls(("add", {"a": 2, "b": 3}))
        self.model.reply("2 + 3 = 5")
        path = f"/api/toolcalling/conversations/{conversation.pk}/messages/"
        environ = wsgi_post(path, {"content": "What is 2 + 3?"}, self.token)

        def turn() -> tuple[str, bytes]:
            started: list[str] = []
            body = self.handler(environ, lambda status, headers, exc_info=None: started.append(status))
            try:
                return started[0], b"".join(body)
            finally:
                body.close()  # as a server closes it: Django's request_finished

        def check(answer: tuple[str, bytes]) -> None:
            status, content = answer
            assert status == "201 Created", content
            shown = json.loads(content)
            assert shown["status"] == "idle"
            assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "tool", "assistant"]
            assert shown["messages"][-1]["content"] == "2 + 3 = 5"

        return turn, check

    def run_in_conversation(self) -> Counted:
        """``Assistant.run`` of ``posted_turn``'s turn, in a conversation made before, for a user loaded afresh (as
        a task or a command loads it, and as each request loads its user): ``VIEW_OVER_RUN`` compares them."""
        conversation = Conversation.objects.create(user=self.user, assistant_id="helper")
        self.model.calls(("add", {"a": 2, "b": 3}))
        self.model.reply("2 + 3 = 5")
        user = get_user_model().objects.get(pk=self.user.pk)

        def check(result: Any) -> None:
            assert result.reply == "2 + 3 = 5"
            assert result.conversation.messages.count() == 4

        return lambda: self.assistant.run(user, "What is 2 + 3?", conversation), check


SCENARIOS = ["first_turn", "turn_at_20", "gated_continuation", "streamed_turn", "posted_turn"]


def counted(turn: Callable[[], Any]) -> tuple[Any, Cost]:
    with counting() as found:
        outcome = turn()
    return outcome, found[0]


def least(cost: Cost, again: Cost) -> Cost:
    """Each count's lower of two runs of a turn: one that crossed the hour also made the next period's usage
    counter rows."""
    return Cost(min(cost.statements, again.statements), min(cost.python_calls, again.python_calls))


def measure(scenarios: Scenarios, name: str) -> Cost:
    """The scenario's cost, counted on a turn set up afresh and run on the test's turn thread."""
    turn, check = getattr(scenarios, name)()
    outcome, cost = scenarios.thread.submit(counted, turn).result()
    check(outcome)
    return cost


# The budgets ---------------------------------------------------------------------------------------------


def load() -> dict[str, Any]:
    if not BUDGET_FILE.exists():  # a line's first recording
        about = json.loads(BUDGET_FILE.with_name("turn_budget.json").read_text())["about"]
        return {"about": about, "budgets": {}}
    return json.loads(BUDGET_FILE.read_text())


def verdict(metric: str, count: int, budget: int) -> str | None:
    """What is wrong with ``count`` against ``budget``, or None. Statements are held exactly: each is a round
    trip to the database, and their number does not vary from run to run."""
    above, below = (0.0, 0.0) if metric == "statements" else (ABOVE, BELOW)
    if count > budget * (1 + above):
        allowed = f"at most +{above:.0%}" if above else "held exactly"
        return (
            f"{metric}: {count}, over the budget of {budget} (+{(count - budget) / budget:.1%}; {allowed})."
            " Remove the extra work, or raise the budget with a reason (docs/development.md)."
        )
    if count < budget * (1 - below):
        return (
            f"{metric}: {count}, under the budget of {budget} ({(count - budget) / budget:.1%}). Lower the"
            " budget so the gain is kept: TOOLCALLING_RECORD_BUDGET=1 (docs/development.md)."
        )
    return None


def settled(old: int, new: int) -> int:
    """The number of calls to record: the old one while the new is within the run-to-run noise."""
    return old if abs(new - old) <= old * NOISE else new


def record(name: str, database: str, api: str, cost: Cost) -> None:
    """Write this pass's numbers for ``name``; a budget that rises (or a new one) takes ``TOOLCALLING_BUDGET_WHY``."""
    budgets = load()
    entries = budgets["budgets"].setdefault(name, {}).setdefault(database, {})
    old = entries.get(api)
    if old is not None:
        cost = Cost(cost.statements, settled(old["python_calls"], cost.python_calls))
    raised = old is None or cost.statements > old["statements"] or cost.python_calls > old["python_calls"]
    if raised and not WHY:
        was = "none" if old is None else f"{old['statements']} statements, {old['python_calls']} calls"
        pytest.fail(
            f"{name} on {database} + {api}: {cost.statements} statements, {cost.python_calls} calls (was"
            f" {was}). Say why it rises: TOOLCALLING_BUDGET_WHY='…' with TOOLCALLING_RECORD_BUDGET=1."
        )
    entries[api] = {**asdict(cost), "why": WHY if raised or old is None else old["why"]}
    BUDGET_FILE.write_text(json.dumps(budgets, indent=2, ensure_ascii=False) + "\n")


def problems(cost: Cost, budget: dict[str, Any]) -> list[str]:
    found = (verdict(metric, getattr(cost, metric), budget[metric]) for metric in ("statements", "python_calls"))
    return [problem for problem in found if problem is not None]


def over(cost: Cost, budget: dict[str, Any]) -> bool:
    return cost.statements > budget["statements"] or cost.python_calls > budget["python_calls"] * (1 + ABOVE)


@pytest.fixture
def scenarios(model: ScriptedModel, alice: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scenarios]:
    if "MUTANT_UNDER_TEST" in os.environ:  # set in each of mutmut's phases, its clean run too (make mutation)
        pytest.skip("the budgets are the app's code as written, not under mutmut's trampolines")
    # Every text piece its own delta event: how many pieces a window gathers depends on the clock, and a
    # count that depended on it would not repeat.
    monkeypatch.setattr(_deltas, "WINDOW", 0.0)
    # No tracer provider, as on a site that set none: the spans cost the same whether or not a test of the
    # session set OpenTelemetry's global one first (it can be set once per process, so it stays).
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    carol = get_user_model().objects.create_user("carol", password="pw", is_staff=True)
    carol.user_permissions.add(*Permission.objects.filter(codename="approve_toolcall"))
    approver = get_user_model().objects.get(pk=carol.pk)
    # Kept connections, as a production site keeps them: the WSGI handler's close_old_connections at a request's
    # start and end closes none (shared by every thread's connection; set before the turn thread opens its own).
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", None)
    # The turns run on a thread of their own, not the test's: a session's browser tests leave an event loop
    # running in the test's thread (Playwright's), and with one there every database operation asks more of
    # Django's async-safety check.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="turn-budget") as thread:
        try:
            yield Scenarios(model, alice, approver, thread)
        finally:
            thread.submit(connections.close_all).result()  # that thread's connections only


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.django_db(transaction=True)  # real transactions: their BEGIN and COMMIT are statements the turn sends
def test_a_turn_stays_within_its_cost_budget(scenarios: Scenarios, name: str, model_api: str) -> None:
    database, api = settings.DATABASE, model_api
    budget = load()["budgets"].get(name, {}).get(database, {}).get(api)
    if budget is None and not RECORD:
        missing = f"no budget for {name} on {database} + {api} ({LINE}): the passes of make test are {PASSES}"
        if on_ci() and (database, api) in PASSES:
            pytest.fail(f"{missing}. Record it (docs/development.md); CI=true fails a pass without one.")
        pytest.skip(missing)
    measure(scenarios, name)  # warms the process up: imports, connections, caches, this period's usage counters
    cost = measure(scenarios, name)
    if MEASURED_TO:
        with open(MEASURED_TO, "a") as out:
            row = {"scenario": name, "database": database, "api": api, "budgets": str(BUDGET_FILE), **asdict(cost)}
            out.write(json.dumps(row) + "\n")
    if RECORD:
        record(name, database, api, cost)
        return
    if over(cost, budget):
        # Once more before failing: a turn that crossed the hour makes the next period's usage counter rows.
        # Extra work put on the turn's path is there on every run.
        cost = least(cost, measure(scenarios, name))
    found = problems(cost, budget)
    assert not found, f"{name} on {database} + {api}: " + " ".join(found) + f" (Last raised: {budget['why']})"


@pytest.mark.django_db(transaction=True)
def test_the_rest_api_around_a_turn_makes_at_most_1_3x_the_calls_of_assistant_run(scenarios: Scenarios) -> None:
    for name in ("run_in_conversation", "posted_turn"):  # warm-ups, as for a budget
        measure(scenarios, name)
    run, posted = measure(scenarios, "run_in_conversation"), measure(scenarios, "posted_turn")
    if posted.python_calls > run.python_calls * VIEW_OVER_RUN:
        # Once more before failing, as for a budget: extra work put on the view's path is there on every run.
        run = least(run, measure(scenarios, "run_in_conversation"))
        posted = least(posted, measure(scenarios, "posted_turn"))
    ratio = posted.python_calls / run.python_calls
    if MEASURED_TO:
        with open(MEASURED_TO, "a") as out:
            for name, cost in (("run_in_conversation", run), ("posted_turn_beside_it", posted)):
                row = {"scenario": name, "database": settings.DATABASE, "api": "", **asdict(cost)}
                out.write(json.dumps(row) + "\n")
    assert ratio <= VIEW_OVER_RUN, (
        f"The REST API's POST of a turn made {posted.python_calls} calls ({posted.statements} statements),"
        f" {ratio:.3f}x the {run.python_calls} ({run.statements} statements) of Assistant.run's same turn on"
        f" {settings.DATABASE}: at most {VIEW_OVER_RUN}x. Take the extra work out of the view's path"
        " (toolcalling/api/, toolcalling/web/)."
    )


def test_every_pass_of_make_test_has_a_budget_with_its_reason() -> None:
    if LINE not in LINE_PASSES:
        pytest.skip(f"make test runs no pass on {LINE}: its lines are {sorted(LINE_PASSES)}")
    budgets = load()
    assert sorted(budgets["budgets"]) == sorted(SCENARIOS)
    for name, by_database in budgets["budgets"].items():
        for database, api in PASSES:
            entry = by_database.get(database, {}).get(api)
            assert entry is not None, f"{name}: no budget for {database} + {api}"
            assert set(entry) == {"statements", "python_calls", "why"}, entry
            assert all(isinstance(entry[m], int) and entry[m] > 0 for m in ("statements", "python_calls")), entry
            assert entry["why"].strip(), f"{name} on {database} + {api}: say why the budget was last raised"


def test_calls_may_be_1_percent_over_or_5_under_their_budget_and_statements_not_one_either_way() -> None:
    assert verdict("python_calls", 10_100, 10_000) is None
    assert "over the budget" in (verdict("python_calls", 10_101, 10_000) or "")
    assert verdict("python_calls", 9_500, 10_000) is None
    assert "Lower the budget" in (verdict("python_calls", 9_499, 10_000) or "")
    assert verdict("statements", 40, 40) is None
    assert "over the budget" in (verdict("statements", 41, 40) or "")
    assert "Lower the budget" in (verdict("statements", 39, 40) or "")
