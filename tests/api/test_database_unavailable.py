"""While the database cannot be reached (its server restarting, the connections cut), every endpoint answers 503
``database_unavailable`` in the app's JSON shape with ``Retry-After``, and logs it, instead of the site's HTML 500
page; a message posted meanwhile is not stored at all, says so, and is taken once the database is back.

The database goes away for real: the open connection is cut (``pg_terminate_backend`` on PostgreSQL, ``KILL`` on
MariaDB, closed on SQLite) and no new one can be made (the connection settings point where no database is: on
SQLite a file in a directory that does not exist)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections
from rest_framework.test import APIClient

from tests.asgi_server import ASGIAPIClient
from toolcalling import Assistant, ToolContext, tool
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.toolkit import assistants, tools

API = "/api/toolcalling"
# Each database loses its connections its own way: the PostgreSQL and MariaDB passes of make test run these too.
pytestmark = pytest.mark.database


@contextmanager
def database_down(tmp_path: Path) -> Iterator[None]:
    """Within the block the database is gone: the connection of the thread that enters it is cut, and no thread
    can connect (a connection that other threads hold open stays, so none is left broken for later tests)."""
    settings_dict = connection.settings_dict  # the one dict every thread's connection is made from
    saved = dict(settings_dict)
    if connection.vendor == "sqlite":
        settings_dict["NAME"] = str(tmp_path / "gone" / "db.sqlite3")  # "unable to open database file"
        connection.close()  # no server to cut it: closed, and connecting again fails
    else:
        _cut_connection(saved)  # its next query: "terminating connection due to administrator command"
        if connection.vendor == "postgresql":
            settings_dict["HOST"] = str(tmp_path)  # a socket directory without a server: connecting is refused
        else:
            settings_dict["HOST"], settings_dict["PORT"] = "127.0.0.1", 1  # nothing listens there
    try:
        yield
    finally:
        settings_dict.clear()
        settings_dict.update(saved)
        connections.close_all()  # this thread's broken connection: the next query connects again


def _cut_connection(settings_dict: dict[str, Any]) -> None:
    """Terminate this thread's connection from a connection of its own, as a server going down does."""
    if connection.connection is None:
        return  # none open: the next one is refused
    postgresql = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()" if postgresql else "SELECT CONNECTION_ID()")
        (pid,) = cursor.fetchone()
    other = connection.copy()
    other.settings_dict = dict(settings_dict)
    try:
        with other.cursor() as cursor:
            cursor.execute(
                f"SELECT pg_terminate_backend({int(pid)}, 5000)" if postgresql else f"KILL CONNECTION {int(pid)}"
            )
    finally:
        other.close()


@pytest.fixture
def session(transactional_db, alice) -> APIClient:
    """A client signed in as the chat page is: its session (and so its user) is read from the database."""
    client = APIClient()
    assert client.login(username="alice", password="pw")
    client.raise_request_exception = False  # what a client gets, not the test client's re-raise
    return client


@pytest.fixture
def forced(transactional_db, alice) -> APIClient:
    """A client whose user is known without the database: the endpoint's own queries are the first to fail."""
    client = APIClient()
    client.force_authenticate(alice)
    client.raise_request_exception = False
    return client


def assert_unavailable(response: Any, caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    assert response.status_code == 503, response.content[:300]
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    assert int(response["Retry-After"]) > 0
    body = json.loads(response.content)
    assert body["code"] == "database_unavailable" and body["status"] is None
    assert "not taken" in body["detail"], body["detail"]
    logged = [r for r in caplog.records if r.name == "toolcalling" and r.levelno == logging.ERROR and r.exc_info]
    assert logged, "the database error was not logged with its traceback"
    return body


def post_message(client: APIClient, conversation: Conversation, content: str = "Hello?") -> Any:
    body = json.dumps({"content": content})
    return client.generic(
        "POST", f"{API}/conversations/{conversation.pk}/messages/", body, content_type="application/json"
    )


def test_a_message_posted_while_the_database_is_down_is_refused_and_taken_once_it_is_back(
    forced, alice, model, tmp_path, caplog
):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")

    with database_down(tmp_path):
        response = post_message(forced, conversation)

    assert_unavailable(response, caplog)
    # Nothing of it was stored: no message, the conversation as it was, no model call.
    conversation.refresh_from_db()
    assert conversation.status == "idle" and not Message.objects.filter(conversation=conversation).exists()
    assert model.requests == []

    model.reply("Hello!")
    again = post_message(forced, conversation)
    assert again.status_code == 201, again.content
    assert [m["content"] for m in again.json()["messages"]] == ["Hello?", "Hello!"]


def test_the_history_while_the_database_is_down_is_a_503(forced, alice, tmp_path, caplog):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    with database_down(tmp_path):
        response = forced.get(f"{API}/conversations/{conversation.pk}/messages/")
    assert_unavailable(response, caplog)


def test_an_ai_sdk_message_while_the_database_is_down_is_a_503(forced, alice, model, tmp_path, caplog):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    body = {"id": str(conversation.pk), "trigger": "submit-message",
            "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Hello?"}]}]}  # fmt: skip
    with database_down(tmp_path):
        response = forced.post(f"{API}/ai-sdk/chat", body, format="json")
    assert_unavailable(response, caplog)
    assert not Message.objects.filter(conversation=conversation).exists() and model.requests == []


def test_an_mcp_call_while_the_database_is_down_is_a_503(forced, tmp_path, caplog):
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "delete_everything", "arguments": {"confirm": "yes"}}}  # fmt: skip
    with database_down(tmp_path):
        response = forced.post(f"{API}/mcp/helper/", call, format="json")
    assert_unavailable(response, caplog)
    assert not ToolCall.objects.exists() and not Conversation.objects.exists()


# The chat page's calls (and any signed-in client's): the session, and with it the user, is read first.
def _session_requests(conversation: Conversation) -> list[tuple[str, str, Any]]:
    pk = conversation.pk
    return [
        ("GET", f"{API}/conversations/", None),
        ("GET", f"{API}/conversations/{pk}/messages/", None),
        ("POST", f"{API}/conversations/{pk}/messages/", {"content": "Hello?"}),
        ("GET", f"{API}/usage/", None),
        ("GET", f"{API}/tool-calls/", None),
        ("GET", f"{API}/ai-sdk/chat/{pk}/messages", None),
        ("POST", f"{API}/ag-ui/", {"threadId": str(pk), "runId": "r1", "state": {}, "context": [], "tools": [],
                                   "forwardedProps": {}, "messages": [{"id": "u1", "role": "user", "content": "Hi"}]}),
        ("POST", f"{API}/mcp/helper/", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ]  # fmt: skip


def test_every_endpoint_of_a_signed_in_client_is_a_503_while_the_database_is_down(
    session, alice, model, tmp_path, caplog
):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    for method, url, body in _session_requests(conversation):
        caplog.clear()
        with database_down(tmp_path):
            response = session.generic(method, url, json.dumps(body) if body is not None else "",
                                       content_type="application/json")  # fmt: skip
        assert_unavailable(response, caplog)
    assert not Message.objects.exists() and model.requests == []


# The database goes away in the middle of a turn: after its claim stored the message, while a tool runs.
class Cut(ExitStack):
    """Holds the database away from its tool's call (in the turn's own thread) until the test closes it;
    ``happened`` is set once it is gone, and the tool returns once ``go_on`` is set (at once unless cleared)."""

    def __init__(self) -> None:
        super().__init__()
        self.happened, self.go_on = threading.Event(), threading.Event()
        self.go_on.set()


@pytest.fixture
def cut_mid_turn(transactional_db, tmp_path) -> Iterator[Cut]:
    """The assistant ``database-cut``, whose tool ``cut_the_database`` takes the database away."""
    cut = Cut()

    def cut_the_database(ctx: ToolContext) -> str:
        """Take the database away."""
        cut.enter_context(database_down(tmp_path))
        cut.happened.set()
        assert cut.go_on.wait(10)
        return "cut"

    made = tool(cut_the_database)

    class DatabaseCut(Assistant):
        id = "database-cut"
        tools = [made]

    try:
        with cut:
            yield cut
    finally:
        assistants.unregister(DatabaseCut.id)
        tools.unregister(made.name)


def client_of(server: str, user: Any) -> APIClient:
    """A client whose requests go through Django's WSGI or ASGI handler (under ASGI a turn runs on the turn loop)."""
    client = ASGIAPIClient() if server == "asgi" else APIClient()
    client.force_authenticate(user)
    client.raise_request_exception = False
    return client


@pytest.mark.parametrize("server", ["wsgi", "asgi"])
def test_a_message_whose_turn_loses_the_database_is_answered_503_saying_it_was_stored(
    server, alice, model, cut_mid_turn, caplog
):
    conversation = Conversation.objects.create(user=alice, assistant_id="database-cut")
    model.call("cut_the_database")

    response = post_message(client_of(server, alice), conversation)
    cut_mid_turn.close()

    assert response.status_code == 503, response.content[:300]
    assert int(response["Retry-After"]) > 0
    body = json.loads(response.content)
    assert body["code"] == "database_unavailable", body
    assert "was stored" in body["detail"] and "not taken" not in body["detail"], body["detail"]
    # It was: the message, and the model's answer before the database went.
    stored = list(Message.objects.filter(conversation=conversation).order_by("id").values_list("role", flat=True))
    assert stored == ["user", "assistant"]
    assert any(r.name == "toolcalling" and r.levelno == logging.ERROR and r.exc_info for r in caplog.records)


@pytest.mark.parametrize("server", ["wsgi", "asgi"])
def test_a_streamed_turn_that_loses_the_database_ends_with_an_error_event(server, alice, model, cut_mid_turn):
    conversation = Conversation.objects.create(user=alice, assistant_id="database-cut")
    model.call("cut_the_database")
    body = json.dumps({"content": "Hello?"})
    url = f"{API}/conversations/{conversation.pk}/messages/"

    client = client_of(server, alice)
    response = client.generic("POST", url, body, content_type="application/json", HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 200 and response.streaming
    text = b"".join(response.streaming_content).decode()
    cut_mid_turn.close()

    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    errors = [e for e in events if e["type"] == "error"]
    assert errors and errors[-1]["code"] in ("turn_not_stored", "database_unavailable"), events


def test_an_ai_sdk_stream_whose_reader_loses_the_database_ends_with_the_error_and_its_finish(
    alice, model, cut_mid_turn
):
    conversation = Conversation.objects.create(user=alice, assistant_id="database-cut")
    model.call("cut_the_database")
    body = {"id": str(conversation.pk), "trigger": "submit-message",
            "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Hello?"}]}]}  # fmt: skip
    cut_mid_turn.go_on.clear()

    response = client_of("wsgi", alice).post(f"{API}/ai-sdk/chat", body, format="json")
    assert response.status_code == 200 and response.streaming
    assert cut_mid_turn.happened.wait(10)
    connections.close_all()  # the reader's connection goes too (on SQLite no server cuts it)
    cut_mid_turn.go_on.set()
    text = b"".join(response.streaming_content).decode()
    cut_mid_turn.close()

    assert_ends_with_the_error(text)


def assert_ends_with_the_error(text: str) -> None:
    """An AI SDK stream that ends as a failed turn's: its error, then its finish and ``[DONE]``."""
    chunks = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    assert [c["type"] for c in chunks if c["type"] in ("error", "finish")] == ["error", "finish"], chunks
    error = next(c for c in chunks if c["type"] == "error")
    assert error["code"] == "database_unavailable", error
    assert text.rstrip().endswith("data: [DONE]")


def test_an_ai_sdk_stream_resumed_when_its_reader_loses_the_database_ends_with_the_error_and_its_finish(
    forced, alice, tmp_path
):
    # A turn runs (in another process): the SDK's resumeStream follows it.
    conversation = Conversation.objects.create(user=alice, assistant_id="helper", status="running")
    response = forced.get(f"{API}/ai-sdk/chat/{conversation.pk}/stream")
    assert response.status_code == 200 and response.streaming

    with database_down(tmp_path):
        text = b"".join(response.streaming_content).decode()

    assert_ends_with_the_error(text)


def test_an_ag_ui_run_whose_reader_loses_the_database_ends_with_its_run_error(alice, model, cut_mid_turn):
    conversation = Conversation.objects.create(user=alice, assistant_id="database-cut")
    model.call("cut_the_database")
    body = {"threadId": str(conversation.pk), "runId": "r1", "state": {}, "context": [], "tools": [],
            "forwardedProps": {}, "messages": [{"id": "u1", "role": "user", "content": "Hello?"}]}  # fmt: skip
    cut_mid_turn.go_on.clear()

    response = client_of("wsgi", alice).post(f"{API}/ag-ui/", body, format="json")
    assert response.status_code == 200 and response.streaming
    assert cut_mid_turn.happened.wait(10)
    connections.close_all()  # the reader's connection goes too
    cut_mid_turn.go_on.set()
    text = b"".join(response.streaming_content).decode()
    cut_mid_turn.close()

    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_ERROR", events
    assert events[-1]["code"] == "database_unavailable", events[-1]
