"""A site's database router decides where a turn writes, and the reads that decide a write are made there too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from tests.model_signals import Seen, listening
from toolcalling import storage
from toolcalling.models import Conversation, ToolCall

URL = "/api/toolcalling/conversations/{}/messages/"
WRITES = "writes"  # the second alias of the test database (tests/settings.py)


@pytest.fixture
def seen() -> Iterator[list[Seen]]:
    with listening() as heard:
        yield heard


class AppWritesElsewhere:
    """A site's router: the app's writes go to ``writes``, every read to ``default`` (one database, two
    connections, so what went where shows; a replica would only show it as stale reads)."""

    def __init__(self, also: tuple[str, ...] = ()) -> None:
        self.apps = ("toolcalling", *also)

    def db_for_read(self, model: type, **hints: Any) -> str:
        return "default"

    def db_for_write(self, model: type, **hints: Any) -> str | None:
        return WRITES if model._meta.app_label in self.apps else None

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True


def app_statements(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "toolcalling_" in q["sql"]]


def writing(statements: list[str]) -> list[str]:
    return [sql for sql in statements if sql.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]


@pytest.mark.django_db(transaction=True, databases=["default", WRITES])
@pytest.mark.toolcalling(USAGE_LIMITS=[{"tokens": 10**9, "per": "user", "period": "day"}])
def test_a_turns_writes_and_the_reads_that_decide_them_use_the_routers_write_database(api, model, alice, seen):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    model.call("add", {"a": 2, "b": 3})
    model.reply("5.")
    with (
        override_settings(DATABASE_ROUTERS=[AppWritesElsewhere()]),
        CaptureQueriesContext(connections["default"]) as on_default,
        CaptureQueriesContext(connections[WRITES]) as on_writes,
    ):
        response = api.post(URL.format(conversation.pk), {"content": "2+3?"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["messages"][-1]["content"] == "5."

    assert writing(app_statements(on_default)) == []
    written = writing(app_statements(on_writes))
    assert len([sql for sql in written if "INSERT INTO" in sql and "toolcalling_message" in sql.split("(")[0]]) == 4
    assert len([sql for sql in written if "INSERT INTO" in sql and "toolcalling_toolcall" in sql.split("(")[0]]) == 1
    assert [sql for sql in written if "UPDATE" in sql and "toolcalling_conversation" in sql]  # the fenced writes
    # What decides a write is read where it is written: the call ids already taken, the usage counter rows.
    reads = [sql for sql in app_statements(on_writes) if sql.lstrip().upper().startswith("SELECT")]
    assert [sql for sql in reads if "toolcalling_toolcall" in sql and "call_id" in sql]
    assert [sql for sql in reads if "toolcalling_usagecounter" in sql]
    assert not [sql for sql in app_statements(on_default) if "toolcalling_usagecounter" in sql]
    # Every message and call a site's receiver hears of was written there, inside a transaction there.
    assert len(seen) == 4 + 2  # four messages; the call created, then answered
    assert {(s.using, s.atomic) for s in seen} == {(WRITES, True)}
    assert ToolCall.objects.get(conversation=conversation).status == "succeeded"


@pytest.mark.django_db(transaction=True, databases=["default", WRITES])
def test_the_calls_of_one_answer_are_inserted_together_on_the_routers_write_database(api, model, alice, seen):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    model.calls(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4}))
    model.reply("3 and 7.")
    with (
        override_settings(DATABASE_ROUTERS=[AppWritesElsewhere()]),
        CaptureQueriesContext(connections["default"]) as on_default,
        CaptureQueriesContext(connections[WRITES]) as on_writes,
    ):
        response = api.post(URL.format(conversation.pk), {"content": "1+2 and 3+4?"}, format="json")
    assert response.status_code == 201, response.content
    assert writing(app_statements(on_default)) == []
    written = writing(app_statements(on_writes))
    assert len([sql for sql in written if "INSERT INTO" in sql and "toolcalling_toolcall" in sql.split("(")[0]]) == 1
    calls = [s for s in seen if s.model == "ToolCall" and s.created]
    assert len(calls) == 2 and {(s.using, s.atomic) for s in calls} == {(WRITES, True)}
    assert sorted(ToolCall.objects.filter(conversation=conversation).values_list("status", flat=True)) == [
        "succeeded",
        "succeeded",
    ]


@pytest.mark.django_db(transaction=True, databases=["default", WRITES])
def test_a_turns_claim_and_stop_check_use_the_routers_write_database(alice):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    with (
        override_settings(DATABASE_ROUTERS=[AppWritesElsewhere()]),
        CaptureQueriesContext(connections["default"]) as on_default,
        CaptureQueriesContext(connections[WRITES]) as on_writes,
    ):
        token = storage.claim(conversation, from_statuses=["idle"])
        ledger = storage.Ledger(conversation, token)
        assert ledger.check_stop() is False
        Conversation.objects.using(WRITES).filter(pk=conversation.pk).update(stop_requested_at="2026-01-01T00:00Z")
        assert ledger.check_stop() is True
    assert token is not None
    assert app_statements(on_default) == []
    assert len([sql for sql in app_statements(on_writes) if "stop_requested_at" in sql]) == 4  # claim, 2 checks, stop


@pytest.mark.django_db(transaction=True, databases=["default", WRITES])
def test_a_decision_writes_in_a_transaction_on_the_routers_write_database(api, model, alice, seen):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    from toolcalling import approval

    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    model.call("delete_everything", {"confirm": "yes"})
    api.post(URL.format(conversation.pk), {"content": "Delete it all."}, format="json")
    call = ToolCall.objects.get(conversation=conversation, status="awaiting_approval")
    staff = get_user_model().objects.create_user("carol", password="pw", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    staff = get_user_model().objects.get(pk=staff.pk)
    seen.clear()
    with (
        # The admin's log entry of the decision goes with it (on one SQLite file, two connections that both
        # write inside one decision would wait for each other).
        override_settings(DATABASE_ROUTERS=[AppWritesElsewhere(also=("admin",))]),
        CaptureQueriesContext(connections["default"]) as on_default,
    ):
        approval.reject(call, staff, "Not today.")
    assert writing(app_statements(on_default)) == []
    # The call's answer and its tool message are written together, inside one transaction there.
    assert {(s.using, s.atomic) for s in seen} == {(WRITES, True)}
    assert {s.model for s in seen} >= {"ToolCall", "Message"}
    call.refresh_from_db()
    assert call.status == "rejected" and call.decision_reason == "Not today."
