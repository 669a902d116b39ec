"""What a turn reads of its history: under a memory budget only the tail, whatever the conversation's length;
and the budgets keep exactly the whole turns the memory policy says, computed in one pass."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcalling import Assistant, storage
from toolcalling.engine import _memory as memory
from toolcalling.model_apis import AssistantMessage, HistoryMessage, ToolMessage, UserMessage
from toolcalling.models import Conversation, Message, ToolCall

URL = "/api/toolcalling/conversations/{}/messages/"


class BudgetedHelper(Assistant):
    id = "budgeted"
    instructions = "Short memory."
    tools = ["add"]
    history_max_messages = 40


def fill(conversation: Conversation, turns: int) -> None:
    """``turns`` past turns of four messages each: question, call, result, answer."""
    messages = []
    for n in range(turns):
        messages += [
            Message(conversation=conversation, role="user", content=f"question {n}"),
            Message(conversation=conversation, role="assistant", content=""),
            Message(conversation=conversation, role="tool", content="5", tool_call_id=f"c{n}"),
            Message(conversation=conversation, role="assistant", content=f"answer {n}"),
        ]
    created = Message.objects.bulk_create(messages)
    ToolCall.objects.bulk_create(
        ToolCall(conversation=conversation, message=created[4 * n + 1], call_id=f"c{n}", name="add",
                 raw_arguments='{"a": 2, "b": 3}', status="succeeded")
        for n in range(turns)
    )  # fmt: skip


@pytest.fixture
def rows_read(monkeypatch) -> list[int]:
    """How many stored messages each history read returned (the reads themselves are the real ones)."""
    counts: list[int] = []
    real = memory.history_items

    def counting(*args: Any, **kwargs: Any) -> Any:
        rows = real(*args, **kwargs)
        counts.append(len(rows))
        return rows

    monkeypatch.setattr(memory, "history_items", counting)
    return counts


def run_turn(api, conversation: Conversation, model) -> tuple[int, dict]:
    model.call("add", {"a": 1, "b": 1})
    model.reply("Two.")
    with CaptureQueriesContext(connection) as queries:
        response = api.post(URL.format(conversation.pk), {"content": "1+1?"}, format="json")
    assert response.status_code == 201, response.content
    return len(queries), model.requests[-1]


@pytest.mark.chat_completions
def test_under_a_budget_a_turn_reads_the_same_with_10_or_2000_stored_messages(api, alice, model, rows_read):
    short = Conversation.objects.create(user=alice, assistant_id="budgeted")
    long = Conversation.objects.create(user=alice, assistant_id="budgeted")
    fill(short, 2)  # 8 messages
    fill(long, 500)  # 2,000 messages
    run_turn(api, Conversation.objects.create(user=alice, assistant_id="budgeted"), model)  # makes usage counter rows
    rows_read.clear()
    short_queries, _ = run_turn(api, short, model)
    short_rows = sum(rows_read)
    rows_read.clear()
    long_queries, sent = run_turn(api, long, model)
    assert short_queries == long_queries
    assert sum(rows_read) <= memory.PAGE  # one page of the newest messages, not 2,000
    assert short_rows <= sum(rows_read)
    # The model got the newest whole turns that fit 40 messages, the current one complete.
    history = sent["messages"][1:]
    assert [m["role"] for m in history[-3:]] == ["user", "assistant", "tool"]
    assert history[-3]["content"] == "1+1?" and history[-1]["tool_call_id"] == history[-2]["tool_calls"][0]["id"]
    # 9 past turns of 4 messages fit beside the 3 of this one; a 10th would not.
    assert len(history) == 39 and history[0] == {"role": "user", "content": "question 491"}


# The budgets against their definition ------------------------------------------------------------------

item_roles = st.lists(st.sampled_from(["user", "assistant", "tool"]), max_size=30)
# Text the app stores as it is (it makes NUL and lone surrogates storable before they reach the database).
storable_text = st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=30)


def naive_trim(items: list[HistoryMessage], max_messages: int | None, max_tokens: int | None) -> list[dict]:
    """The budget's definition, quadratic: the first turn start from which everything fits, else the last turn."""
    starts = [i for i, item in enumerate(items) if isinstance(item, UserMessage)] or [0]
    for start in [0, *starts[1:]]:
        kept = items[start:]
        fits = max_messages is None or len(kept) <= max_messages
        if fits and (max_tokens is None or storage.estimate_tokens(kept) <= max_tokens):
            return kept
    return items[starts[-1] :]


@settings(max_examples=200, deadline=None)
@given(
    roles=item_roles,
    texts=st.lists(st.text(max_size=40), min_size=30, max_size=30),
    max_messages=st.none() | st.integers(1, 20),
    max_tokens=st.none() | st.integers(1, 200),
)
def test_trimming_in_one_pass_keeps_what_the_budget_defines(roles, texts, max_messages, max_tokens):
    kinds = {"user": UserMessage, "assistant": AssistantMessage, "tool": lambda text: ToolMessage("call_1", text)}
    items = [kinds[role](text) for role, text in zip(roles, texts, strict=False)]
    history = memory.History(items[: len(items) // 2])
    history.trimmed(max_messages, max_tokens)  # sizes worked out for a part, then the rest added
    history.extend(items[len(items) // 2 :])
    assert history.trimmed(max_messages, max_tokens) == naive_trim(items, max_messages, max_tokens)


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    turns=st.lists(st.tuples(st.integers(0, 2), storable_text), min_size=1, max_size=12),
    policy=st.sampled_from(["full", "final"]),
    max_messages=st.none() | st.integers(1, 25),
    max_tokens=st.none() | st.integers(1, 300),
    page=st.integers(1, 7),
)
def test_reading_only_the_tail_gives_what_reading_everything_and_trimming_gives(
    alice, monkeypatch, turns, policy, max_messages, max_tokens, page
):
    # A new conversation per example (the user fixture is shared); PAGE is set for each example.
    conversation = Conversation.objects.create(user=alice, assistant_id="budgeted")
    for n, (calls, text) in enumerate(turns):
        Message.objects.create(conversation=conversation, role="user", content=f"q{n} {text}")
        for c in range(calls):
            asked = Message.objects.create(conversation=conversation, role="assistant", content="")
            ToolCall.objects.create(conversation=conversation, message=asked, call_id=f"c{n}-{c}", name="add",
                                    raw_arguments=json.dumps({"a": c}), status="succeeded")  # fmt: skip
            Message.objects.create(conversation=conversation, role="tool", content=text, tool_call_id=f"c{n}-{c}")
        Message.objects.create(conversation=conversation, role="assistant", content=f"a{n} {text}")
    monkeypatch.setattr(memory, "PAGE", page)

    class Budgeted(Assistant):
        memory = policy
        history_max_messages = max_messages
        history_max_tokens = max_tokens

    everything = [item for _, item in memory.history_items(conversation)]
    split = memory.split_turns(everything)
    full = [item for n, turn in enumerate(split) for item in memory._policy(policy, turn, n == len(split) - 1)]
    loaded = memory.load(Budgeted(), conversation).items
    assert loaded == naive_trim(full, max_messages, max_tokens)


@pytest.mark.django_db
def test_the_history_read_without_django_converters_gives_the_rows_django_gives(alice):
    """A turn reads its history as the driver gives the rows (``storage._history.plain_rows``): the same values, of
    the same types, as Django's ``values_list`` converts them to, on every database, whole or by its tail."""
    from toolcalling.models import Attachment
    from toolcalling.storage._history import HISTORY_COLUMNS, history_rows

    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    items = [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "é🙂"}, {"n": 2.5, "x": None}]
    question = Message.objects.create(conversation=conversation, role="user", content="Größe? 🙂")
    Attachment.objects.create(user=alice, conversation=conversation, message=question, storage_name="a/b.png",
                              name="b.png", content_type="image/png", size=2**40)  # fmt: skip
    answer = Message.objects.create(conversation=conversation, role="assistant", content="", provider_items=items)
    for index, call_id in enumerate(["call_1", "call_2"]):
        ToolCall.objects.create(conversation=conversation, message=answer, index=index, call_id=call_id,
                                name="add", raw_arguments='{"a": 1}')  # fmt: skip
    Message.objects.create(conversation=conversation, role="tool", content="boom", tool_call_id="call_1", is_error=True)
    Message.objects.create(conversation=conversation, role="tool", content="2", tool_call_id="call_2")
    Message.objects.create(conversation=conversation, role="assistant", content="Done.")
    Message.objects.create(conversation=conversation, role="system", content="")

    def django_rows(messages: Any) -> list[tuple[Any, ...]]:
        return list(messages.order_by("id", "tool_calls__index").values_list(*HISTORY_COLUMNS))

    everything = Message.objects.filter(conversation=conversation)
    rows = history_rows(conversation)
    assert rows == django_rows(everything) and len(rows) == 7  # the answer twice, once per call

    def types(rows: list[tuple[Any, ...]]) -> list[list[type]]:  # ``is_error`` is 0 or 1 on MariaDB: read as a bool
        named = (zip(HISTORY_COLUMNS, row, strict=True) for row in rows)
        return [[type(value) for name, value in row if name != "is_error"] for row in named]

    assert types(rows) == types(django_rows(everything))
    assert rows[1][HISTORY_COLUMNS.index("provider_items")] == items
    tail = history_rows(conversation, before=everything.order_by("-id")[0].pk, limit=3)
    assert tail == django_rows(everything.filter(id__gte=everything.order_by("-id")[3].pk).exclude(role="system"))
