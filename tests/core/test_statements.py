"""The statements a turn sends to the database: each one named, so one more is a change someone chose."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from toolcalling import Assistant
from toolcalling.exceptions import ModelError
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.testing import Reply
from toolcalling.testing import ToolCall as ScriptedCall

TABLE = re.compile(r'^(?:INSERT INTO|UPDATE|SELECT .*? FROM) [`"]toolcalling_(\w+)[`"]')

# A two-request first turn of a new conversation (``Assistant.run`` without one): the model asks for a call, then
# answers. Three transactions: the answer with its call (and the conversation and its opening message), the call's
# result, the final answer with the turn's end and the usage counters.
FIRST_TURN = [
    "BEGIN",
    "INSERT conversation",  # already claimed, titled, with the answer's tokens
    "INSERT message",  # the user's
    "INSERT message",  # the answer
    "INSERT toolcall",
    "COMMIT",  # durable before the tool runs
    "BEGIN",
    "SET LOCAL",  # the result's commit does not wait for the disk (PostgreSQL only); the next commit does
    "UPDATE conversation",  # the claim's fence, which reads a stop request too
    "UPDATE toolcall",  # the result, if the call is still open
    "INSERT message",  # the tool's
    "COMMIT",
    "BEGIN",
    "UPDATE conversation",  # fence, tokens and the turn's end in one
    "INSERT message",  # the final answer
    "UPDATE usagecounter",  # the rows locked in id order by its own subquery, where the database locks rows
    "COMMIT",
]


def named(sql: str) -> str:
    """A statement as the lists above name it: its verb and its table."""
    if sql.startswith("BEGIN"):  # SQLite's "BEGIN IMMEDIATE" too
        return "BEGIN"
    if sql.startswith("SET LOCAL"):
        return "SET LOCAL"
    found = TABLE.match(sql)
    return f"{sql.split()[0]} {found.group(1)}" if found else sql


def expected(statements: list[str]) -> list[str]:
    return statements if connection.vendor == "postgresql" else [s for s in statements if s != "SET LOCAL"]


@pytest.mark.django_db(transaction=True)  # real transactions: their BEGIN and COMMIT are what is counted
def test_a_two_request_first_turn_sends_these_statements(model, alice):
    assistant = Assistant.get("helper")
    model.calls(("add", {"a": 2, "b": 3}))
    model.reply("5")
    assistant.run(alice, "warm up")  # the process's first turn makes this period's usage counter rows
    model.calls(("add", {"a": 2, "b": 3}))
    model.reply("2 + 3 = 5")
    with CaptureQueriesContext(connection) as queries:
        result = assistant.run(alice, "What is  2 + 3?")
    statements = [named(query["sql"]) for query in queries.captured_queries]
    assert statements == expected(FIRST_TURN)
    assert len(statements) <= (17 if connection.vendor == "postgresql" else 16)
    conversation = Conversation.objects.get(pk=result.conversation.pk)
    assert (conversation.status, conversation.title, conversation.turn_token) == ("idle", "What is 2 + 3?", None)
    assert conversation.total_tokens == sum(m.total_tokens for m in conversation.messages.all()) > 0
    roles = list(conversation.messages.order_by("id").values_list("role", flat=True))
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert [m.pk for m in result.messages] == list(conversation.messages.order_by("id").values_list("pk", flat=True))
    assert ToolCall.objects.get(conversation=conversation).status == "succeeded"


@pytest.mark.django_db(transaction=True)
def test_a_first_turn_whose_model_fails_stores_the_conversation_failed_with_its_message(model, alice):
    assistant = Assistant.get("helper")
    model.error(400, "bad request")
    with pytest.raises(ModelError):
        assistant.run(alice, "Hello?")
    conversation = Conversation.objects.get(user=alice)
    assert conversation.status == "failed"
    assert conversation.title == "Hello?"
    assert list(Message.objects.filter(conversation=conversation).values_list("role", "content")) == [
        ("user", "Hello?")
    ]


# The next turn of that conversation: the claim (with the user's message) before the model is asked, and the
# history read once; the call ids the answer must not repeat are known from that history, not read again. Its
# messages carry no files: the history's join says so, and no attachment is read.
NEXT_TURN = [
    "BEGIN",
    "SET LOCAL",  # the claim's commit does not wait for the disk; the answer's with calls does
    "UPDATE conversation",  # the claim
    "INSERT message",  # the user's
    "COMMIT",
    "SELECT message",  # the history, with its calls and whether a message carries a file joined
    "BEGIN",
    "UPDATE conversation",  # the fence, with the answer's tokens
    "INSERT message",
    "INSERT toolcall",
    "COMMIT",
    *FIRST_TURN[FIRST_TURN.index("COMMIT") + 1 :],
]


@pytest.mark.chat_completions  # a scripted reply reuses a call id, which a reasoning model's pairing refuses
@pytest.mark.django_db(transaction=True)
def test_a_later_turn_reads_its_history_once_and_no_call_ids(model, alice):
    assistant = Assistant.get("helper")
    model.calls(("add", {"a": 2, "b": 3}))
    model.reply("5")
    conversation = assistant.run(alice, "What is 2 + 3?").conversation
    first_id = ToolCall.objects.get(conversation=conversation).call_id
    model.queue(Reply(tool_calls=[ScriptedCall("add", '{"a": 5, "b": 5}', id=first_id)]))  # an id it has
    model.reply("10")
    with CaptureQueriesContext(connection) as queries:
        result = assistant.run(alice, "And 5 + 5?", conversation)
    assert [named(query["sql"]) for query in queries.captured_queries] == expected(NEXT_TURN)
    assert result.reply == "10"
    call_ids = list(ToolCall.objects.filter(conversation=conversation).order_by("id").values_list("call_id", flat=True))
    assert len(call_ids) == len(set(call_ids)) == 2  # the repeated id was replaced, known from the history
    assert call_ids[0] == first_id
