"""Async turns on a site that uses Django's connection pool: each step gives its connection back to the pool,
so a pool sized for requests serves many more turns at once than it has connections."""

from typing import Any

import pytest
from django.conf import settings
from django.db import connections
from django.test import override_settings

from toolcalling import Assistant
from toolcalling.models import Conversation, ToolCall
from toolcalling.testing import Reply
from toolcalling.testing import ToolCall as ScriptedCall

from ..aio import run

POOLED = "pooled"  # the test database through a pool of at most 2 connections (tests/settings.py)
TURNS = 6

pytestmark = pytest.mark.skipif(settings.DATABASE != "postgresql", reason="Django's connection pool is PostgreSQL's")


class EverythingPooled:
    """A site's router sending every read and write to the pooled alias."""

    def db_for_read(self, model: type, **hints: Any) -> str:
        return POOLED

    def db_for_write(self, model: type, **hints: Any) -> str:
        return POOLED

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True


def add_then_answer(body: dict[str, Any]) -> Reply:
    """A call of ``add`` first; once its result is in the history, the answer."""
    if body["messages"][-1]["role"] == "tool":
        return Reply(content=f"The sum is {body['messages'][-1]['content']}.")
    return Reply(tool_calls=[ScriptedCall(name="add", arguments={"a": 2, "b": 3})])


@pytest.mark.chat_completions  # the responder reads Chat Completions' messages
@pytest.mark.django_db(transaction=True, databases=["default", POOLED])
def test_more_turns_at_once_than_the_pool_has_connections_all_end(model, alice):
    for _ in range(2 * TURNS):
        model.respond(add_then_answer)
    helper = Assistant.get("helper")

    async def together() -> list[Any]:
        import asyncio

        return await asyncio.gather(*(helper.arun(alice, f"What is 2 + 3? ({n})") for n in range(TURNS)))

    with override_settings(DATABASE_ROUTERS=[EverythingPooled()]):
        results = run(together())
        pool = connections[POOLED].pool

    assert [result.reply for result in results] == ["The sum is 5."] * TURNS
    ended = Conversation.objects.filter(pk__in=[result.conversation.pk for result in results])
    assert sorted(ended.values_list("status", flat=True)) == ["idle"] * TURNS
    assert ToolCall.objects.filter(conversation__in=ended, status="succeeded").count() == TURNS
    assert pool is not None and pool.max_size == 2  # the turns did run on the small pool
    assert pool.get_stats()["requests_num"] >= TURNS  # each step took a connection and gave it back
