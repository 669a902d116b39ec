"""SQL the ORM built once, sent again (``storage._built``): a turn's fence and the read of the request user's
conversation send what the ORM itself sends, with each call's parameters, and give what it gives, on every
database; what this cannot send as built is the ORM's every time."""

import datetime
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, router
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from toolcalling.models import Conversation
from toolcalling.storage import _built
from toolcalling.storage._built import get_as_built, update_as_built
from toolcalling.usage import Increment

pytestmark = pytest.mark.django_db(transaction=True)


def without_values(sql: str) -> str:
    """A captured statement with its values left out (the captured SQL shows them, each backend its own way)."""
    return re.sub(r"'[^']*'(::\w+)?|\b\d+(\.\d+)?\b|\bNULL\b", "?", sql)


def fenced(conversation: Conversation, values: dict[str, Any], name: str = "test fence") -> int:
    using = router.db_for_write(Conversation)
    fields = Conversation._meta
    where = (
        fields.pk.get_db_prep_value(conversation.pk, connection),
        fields.get_field("status").get_db_prep_value("running", connection),
    )

    def filtered() -> Any:
        return Conversation.objects.using(using).filter(pk=conversation.pk, status="running")

    return update_as_built(Conversation, using, values, filtered=filtered, filter_name=name, where=where)


def captured(write: Any) -> tuple[Any, list[str]]:
    with CaptureQueriesContext(connection) as queries:
        outcome = write()
    return outcome, [query["sql"] for query in queries.captured_queries]


def test_an_update_sends_the_orms_sql_with_each_calls_values_and_counts_its_rows(alice):
    conversation = Conversation.objects.create(
        user=alice, assistant_id="helper", status="running", turn_token=uuid.uuid4()
    )
    other = Conversation.objects.create(user=alice, assistant_id="helper", status="running")
    now = timezone.now()
    values = {"updated_at": now, "prompt_tokens": Increment("prompt_tokens", 5), "turn_token": None}
    _, (orm,) = captured(
        lambda: Conversation.objects.filter(pk=other.pk, status="running").update(
            updated_at=now, prompt_tokens=Increment("prompt_tokens", 5), turn_token=None
        )
    )
    changed, first = captured(lambda: fenced(conversation, values))
    later = now + datetime.timedelta(seconds=1)
    again = {"updated_at": later, "prompt_tokens": Increment("prompt_tokens", 7), "turn_token": None}
    changed_again, second = captured(lambda: fenced(conversation, again))
    assert (changed, changed_again) == (1, 1)
    assert [without_values(sql) for sql in first] == [without_values(orm)]
    assert [without_values(sql) for sql in second] == [without_values(orm)]
    kept = [sql for (name, *_), sql in _built._BUILT.items() if name == "test fence"]
    assert len(kept) == 1 and kept[0] != _built.ORM and kept[0].sql.startswith("UPDATE")
    # Django 5.2 writes NULL, Django 6.1 sends a None as a parameter: each as that Django's ORM sends it.
    assert kept[0].null_parameters == (" = NULL" not in kept[0].sql)
    conversation.refresh_from_db()
    assert (conversation.prompt_tokens, conversation.turn_token) == (12, None)
    assert conversation.updated_at == later
    # No row matches once the filter does not: 0, as update() says.
    Conversation.objects.filter(pk=conversation.pk).update(status="idle")
    assert fenced(conversation, {"updated_at": later, "prompt_tokens": Increment("prompt_tokens", 1)}) == 0
    conversation.refresh_from_db()
    assert conversation.prompt_tokens == 12


def test_values_of_another_shape_are_built_again_and_an_expression_is_the_orms(alice):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper", status="running", title="t")
    assert fenced(conversation, {"updated_at": timezone.now()}, "shapes") == 1
    assert fenced(conversation, {"updated_at": timezone.now(), "error": "boom"}, "shapes") == 1
    assert fenced(conversation, {"updated_at": timezone.now(), "turn_token": None}, "shapes") == 1
    shapes = {kinds for (name, _using, kinds) in _built._BUILT if name == "shapes"}
    assert shapes == {
        (("updated_at", "value"),),
        (("updated_at", "value"), ("error", "value")),
        (("updated_at", "value"), ("turn_token", "null")),
    }
    # An expression other than Increment: the ORM's update(), every time, nothing kept for it.
    assert fenced(conversation, {"title": F("assistant_id")}, "shapes") == 1
    assert all(kinds is not None for (name, _using, kinds) in _built._BUILT if name == "shapes")
    conversation.refresh_from_db()
    assert (conversation.title, conversation.error) == ("helper", "boom")


def test_parameters_not_the_orms_are_not_kept_and_the_orm_sends_the_update(alice):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper", status="running")
    using = router.db_for_write(Conversation)

    def filtered() -> Any:
        return Conversation.objects.using(using).filter(pk=conversation.pk)

    wrong = ("not the id",)
    for _ in range(2):
        assert (
            update_as_built(Conversation, using, {"error": "x"}, filtered=filtered, filter_name="wrong", where=wrong)
            == 1
        )
    assert {sql for (name, *_), sql in _built._BUILT.items() if name == "wrong"} == {_built.ORM}
    conversation.refresh_from_db()
    assert conversation.error == "x"


def as_stored(conversation: Conversation) -> dict[str, Any]:
    return {field.attname: getattr(conversation, field.attname) for field in Conversation._meta.concrete_fields}


def own(pk: Any, user_id: int, name: str = "test read") -> Conversation | None:
    using = router.db_for_read(Conversation)
    fields = Conversation._meta
    where = (
        fields.pk.get_db_prep_value(pk, connection),
        fields.get_field("user").get_db_prep_value(user_id, connection),
    )
    return get_as_built(
        Conversation,
        using,
        filtered=lambda: Conversation.objects.using(using).filter(pk=pk, user_id=user_id)[:1],
        filter_name=name,
        where=where,
    )


def test_a_read_gives_the_instance_the_orm_gives_every_field_converted(alice, bob):
    conversation = Conversation.objects.create(
        user=alice,
        assistant_id="helper",
        title="Ünïcode ✓",
        status="running",
        turn_token=uuid.uuid4(),
        stop_requested_at=timezone.now(),
        state={"cart": [1, 2], "note": "ü"},
        cost=Decimal("0.012345"),
        prompt_tokens=3,
    )
    orm = Conversation.objects.get(pk=conversation.pk)
    for _ in range(2):  # built, then sent as built
        read = own(conversation.pk, alice.pk)
        assert read is not None and not read._state.adding and read._state.db == orm._state.db
        assert as_stored(read) == as_stored(orm)
        assert type(read.pk) is type(orm.pk) and type(read.cost) is type(orm.cost)
    assert _built._READS.built[("test read", router.db_for_read(Conversation))] is not None  # sent as built
    assert own(conversation.pk, bob.pk) is None  # anyone else's: nothing
    assert own(uuid.uuid4(), alice.pk) is None
    read.title = "renamed"
    read.save(update_fields=["title"])  # an instance like any other
    assert Conversation.objects.get(pk=conversation.pk).title == "renamed"


def test_a_read_selecting_more_than_the_models_columns_is_the_orms(alice):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    using = router.db_for_read(Conversation)
    fields = Conversation._meta
    where = (fields.pk.get_db_prep_value(conversation.pk, connection),)
    for _ in range(2):
        read = get_as_built(
            Conversation,
            using,
            filtered=lambda: Conversation.objects.using(using).select_related("user").filter(pk=conversation.pk),
            filter_name="with its user",
            where=where,
        )
        assert read is not None and read.pk == conversation.pk
        assert Conversation.user.is_cached(read)  # the ORM's read, with its related row
    assert _built._READS.built[("with its user", using)] is None


def test_each_thread_builds_its_own_read_with_its_own_connection(alice):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper", state={"n": 1})
    here = own(conversation.pk, alice.pk, "threads")
    using = router.db_for_read(Conversation)
    kept_here = _built._READS.built[("threads", using)]

    def elsewhere() -> tuple[Any, Any]:
        from django.db import connections

        try:
            read = own(conversation.pk, alice.pk, "threads")
            return read, _built._READS.built[("threads", using)]
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        there, kept_there = pool.submit(elsewhere).result()
    assert there is not None and here is not None and as_stored(there) == as_stored(here)
    assert kept_there is not kept_here and kept_there.connection is not kept_here.connection
    assert kept_there.sql == kept_here.sql


def test_what_is_sent_as_built_goes_through_the_connections_execute_wrappers(alice):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper", status="running")
    seen: list[str] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    own(conversation.pk, alice.pk, "wrapped")
    fenced(conversation, {"updated_at": timezone.now()}, "wrapped")
    with connection.execute_wrapper(wrapper):
        assert own(conversation.pk, alice.pk, "wrapped") is not None
        assert fenced(conversation, {"updated_at": timezone.now()}, "wrapped") == 1
    assert [sql.split()[0] for sql in seen] == ["SELECT", "UPDATE"]
