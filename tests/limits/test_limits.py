"""Usage limits across turns, through the API and from Python: a new message over a limit is refused before it
is stored; a turn that reaches one before its next model call ends cleanly; what turns use is counted in rows."""

import json

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from toolcalling import Assistant
from toolcalling.exceptions import UsageLimitExceeded
from toolcalling.models import Conversation, Message, ToolCall, UsageCounter
from toolcalling.testing import Reply, Usage
from toolcalling.testutils import override_toolcalling
from toolcalling.usage import window

from .conftest import history_problems, post, used

PER_USER_TOKENS = [{"tokens": 100, "per": "user", "period": "day"}]


def tenant_of(ctx):
    return ctx.extra.get("tenant")  # "acme" for every user of the helper assistant


@pytest.mark.toolcalling(USAGE_LIMITS=PER_USER_TOKENS)
def test_a_new_message_over_a_limit_is_refused_before_it_is_stored(api, model, new_conversation, alice):
    conversation = new_conversation()
    model.reply("Hello.", usage=(80, 30))
    assert post(api, conversation, "first").status_code == 201
    assert used("user", alice.pk)["tokens"] == 110

    refused = post(api, conversation, "second")
    assert refused.status_code == 429, refused.content
    body = refused.json()
    resets_at = window("day")[1]
    assert body["code"] == "usage_limit_exceeded" and body["status"] == "idle" and body["messages"] == []
    assert body["limit"] == {
        "quantity": "tokens",
        "maximum": 100,
        "per": "user",
        "period": "day",
        "used": 110,
        "resets_at": resets_at.isoformat(),
    }
    assert body["detail"].startswith("You have reached your limit of 100 tokens per day. It resets in ")
    assert 0 < int(refused["Retry-After"]) <= 25 * 3600  # the seconds until the day ends (a day may last 25 hours)
    assert list(Message.objects.filter(conversation_id=conversation).values_list("content", flat=True)) == [
        "first",
        "Hello.",
    ]
    assert Conversation.objects.get(pk=conversation).status == "idle"
    model.assert_done()


@pytest.mark.toolcalling(USAGE_LIMITS=[{"tokens": 150, "per": "user", "period": "day"}])
def test_a_turn_that_reaches_a_limit_mid_way_ends_cleanly(api, model, new_conversation):
    conversation = new_conversation()
    model.call("add", {"a": 1, "b": 2}, usage=(100, 60))  # 160 tokens: the calls of this answer still run
    response = post(api, conversation, "1 + 2?")
    assert response.status_code == 429, response.content
    body = response.json()
    assert body["code"] == "usage_limit_exceeded" and body["status"] == "failed"
    assert body["limit"]["used"] == 160 and response["Retry-After"]
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("user", "1 + 2?"),
        ("assistant", ""),
        ("tool", "3"),
    ]
    assert history_problems(conversation) == []
    conv = Conversation.objects.get(pk=conversation)
    assert conv.error == body["detail"] and conv.turn_token is None
    assert len(model.requests) == 1  # the model was not asked again
    model.assert_done()


@pytest.mark.toolcalling(USAGE_LIMITS=[{"tool_calls": 2, "per": "user", "period": "day"}])
def test_a_tool_call_limit_stops_the_model_being_asked_for_more(api, model, new_conversation, alice):
    conversation = new_conversation()
    model.calls(("add", {"a": 1, "b": 1}), ("whoami", {}))
    response = post(api, conversation, "two calls")
    assert response.status_code == 429 and response.json()["limit"]["quantity"] == "tool_calls"
    assert list(ToolCall.objects.filter(conversation_id=conversation).values_list("status", flat=True)) == [
        "succeeded",
        "succeeded",
    ]
    assert used("user", alice.pk) == {"tokens": used("user", alice.pk)["tokens"], "turns": 1, "tool_calls": 2}
    assert history_problems(conversation) == []
    model.assert_done()


@pytest.mark.toolcalling(USAGE_LIMITS=[{"turns": 2, "per": "user", "period": "hour"}])
def test_a_turn_limit_counts_messages_not_model_calls(api, model, new_conversation):
    conversation = new_conversation()
    model.call("add", {"a": 1, "b": 1})
    model.call("add", {"a": 2, "b": 2})
    model.reply("Done.")  # three model calls in the first turn: it is one turn
    assert post(api, conversation, "one").status_code == 201
    model.reply("Again.")
    assert post(api, conversation, "two").status_code == 201
    third = post(api, conversation, "three")
    assert third.status_code == 429 and third.json()["limit"]["quantity"] == "turns"
    assert third.json()["detail"].startswith("You have reached your limit of 2 messages per hour.")
    assert 0 < int(third["Retry-After"]) <= 3600
    model.assert_done()


def test_limits_of_an_assistant_apply_to_its_turns_only(api, model, new_conversation, alice):
    budget, helper = new_conversation("budget"), new_conversation("helper")
    model.reply("Costly.", usage=(900, 200))  # the budget assistant allows 1000 tokens a day per user
    assert post(api, budget, "spend").status_code == 201
    assert post(api, budget, "more").status_code == 429
    model.reply("Free.", usage=(900, 200))
    # The user's own usage is over 1000 now, but the helper assistant has no limit.
    assert post(api, helper, "elsewhere").status_code == 201
    assert used("user", alice.pk)["tokens"] == 2200
    model.assert_done()


@pytest.mark.toolcalling(USAGE_LIMITS=[{"tokens": 100, "per": tenant_of, "period": "month", "name": "tenant"}])
def test_a_callable_scope_shares_a_limit_between_the_users_of_a_tenant(api, model, new_conversation, bob):
    model.reply("Hi.", usage=(90, 20))
    assert post(api, new_conversation(), "alice spends").status_code == 201
    assert used("tenant", "acme", "month")["tokens"] == 110

    api.force_authenticate(bob)
    refused = post(api, new_conversation(), "bob is in the same tenant")
    assert refused.status_code == 429
    assert refused.json()["limit"]["per"] == "tenant"
    assert refused.json()["detail"].startswith("The limit of 100 tokens per month for tenant is reached.")
    model.assert_done()


def test_a_callable_scope_that_answers_none_does_not_apply(api, model, new_conversation):
    with override_toolcalling(USAGE_LIMITS=[{"tokens": 1, "per": lambda ctx: None, "period": "day"}]):
        model.reply("One.")
        model.reply("Two.")
        conversation = new_conversation()
        assert post(api, conversation, "1").status_code == 201
        assert post(api, conversation, "2").status_code == 201
    model.assert_done()


@pytest.mark.toolcalling(USAGE_LIMITS=[{"tokens": 100, "per": "site", "period": "day"}])
def test_a_site_limit_is_shared_by_everyone(api, model, new_conversation, bob):
    model.reply("Hi.", usage=(90, 20))
    assert post(api, new_conversation(), "alice").status_code == 201
    api.force_authenticate(bob)
    refused = post(api, new_conversation("budget"), "bob, another assistant")
    assert refused.status_code == 429 and refused.json()["limit"]["per"] == "site"
    assert refused.json()["detail"].startswith("This site has reached its limit of 100 tokens per day.")


@pytest.mark.toolcalling(USAGE_LIMITS=PER_USER_TOKENS)
def test_streamed_and_background_messages_over_a_limit_are_refused_as_json(api, model, new_conversation):
    conversation = new_conversation()
    model.reply("Hi.", usage=(90, 20))
    assert post(api, conversation, "spend").status_code == 201
    streamed = api.post(
        f"/api/toolcalling/conversations/{conversation}/messages/",
        {"content": "streamed"},
        format="json",
        HTTP_ACCEPT="text/event-stream",
    )
    assert streamed.status_code == 429 and streamed.json()["code"] == "usage_limit_exceeded"
    assert streamed["Retry-After"]
    background = post(api, conversation, "later", background=True)
    assert background.status_code == 429 and background.json()["code"] == "usage_limit_exceeded"
    assert Message.objects.filter(conversation_id=conversation, role="user").count() == 1
    assert Conversation.objects.get(pk=conversation).status == "idle"


@pytest.mark.toolcalling(USAGE_LIMITS=[{"tokens": 150, "per": "user", "period": "day"}])
def test_a_streamed_turn_that_reaches_a_limit_ends_with_an_error_event(transactional_db, api, model, new_conversation):
    # transactional: the streamed turn runs in a thread of its own, with its own database connection
    conversation = new_conversation()
    model.call("add", {"a": 1, "b": 2}, usage=(100, 60))
    response = api.post(
        f"/api/toolcalling/conversations/{conversation}/messages/",
        {"content": "1 + 2?"},
        format="json",
        HTTP_ACCEPT="text/event-stream",
    )
    text = b"".join(response.streaming_content).decode()
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    assert [e["type"] for e in events][-2:] == ["error", "turn_end"]
    assert events[-2]["detail"].startswith("You have reached your limit of 150 tokens per day.")
    assert events[-1] == {**events[-1], "status": "failed", "stopped": False}
    assert history_problems(conversation) == []
    model.assert_done()


def test_running_a_turn_from_python_raises_with_when_to_retry(alice, model):
    with override_toolcalling(USAGE_LIMITS=[{"turns": 1, "per": "user", "period": "month"}]):
        model.reply("Once.")
        first = Assistant.get("helper").run(alice, "hi")
        with pytest.raises(UsageLimitExceeded) as caught:
            Assistant.get("helper").run(alice, "again", first.conversation)
        with pytest.raises(UsageLimitExceeded):
            next(iter(Assistant.get("helper").steps(alice, "step by step")))
    assert caught.value.wait > 0 and caught.value.limit["period"] == "month"
    assert caught.value.status == "idle" and caught.value.messages == []
    model.assert_done()


def test_a_continuation_after_approval_over_a_limit_fails_with_a_valid_history(
    api, model, new_conversation, approver, django_capture_on_commit_callbacks
):
    from toolcalling import approval

    conversation = new_conversation("budget")
    model.call("delete_everything", {"confirm": "yes"}, usage=(900, 200))
    waiting = post(api, conversation, "delete it")
    assert waiting.status_code == 201 and waiting.json()["status"] == "awaiting_approval"
    call = ToolCall.objects.get(conversation_id=conversation)
    with django_capture_on_commit_callbacks(execute=True):
        approval.reject(call, approver, "no")  # decided: the continuation (eager Celery) would ask the model again
    conv = Conversation.objects.get(pk=conversation)
    assert conv.status == "failed" and "limit of 1,000 tokens per day" in conv.error
    assert history_problems(conversation) == []
    model.assert_done()


def test_every_turn_is_counted_per_user_and_assistant_without_any_limit(api, model, new_conversation, alice):
    conversation = new_conversation()
    model.call("add", {"a": 1, "b": 2}, usage=(10, 5))
    model.reply("3", usage=(20, 5))
    assert post(api, conversation, "1+2").status_code == 201
    expected = {"tokens": 40, "turns": 1, "tool_calls": 1}
    assert Conversation.objects.get(pk=conversation).total_tokens == 40
    for scope, key in (("user", alice.pk), ("assistant", "helper")):
        assert used(scope, key, "day") == used(scope, key, "month") == expected
    assert not UsageCounter.objects.filter(period="hour").exists()  # only limits need hours
    assert UsageCounter.objects.get(scope="user", period="day").user == alice


@pytest.mark.parametrize("limits", [[], [{"tokens": 10**9, "per": "user", "period": "day"}]], ids=["no limit", "limit"])
def test_counts_land_once_when_a_remembered_counter_row_is_gone(api, model, new_conversation, alice, limits):
    """A process remembers its counter rows; one deleted meanwhile (say, by a cleanup job) is made again, and
    the rows still there are not counted twice."""
    with override_toolcalling(USAGE_LIMITS=limits):
        conversation = new_conversation()
        model.reply("one", usage=(10, 5))
        assert post(api, conversation, "first").status_code == 201
        UsageCounter.objects.filter(scope="user", period="day").delete()
        model.reply("two", usage=(20, 5))
        assert post(api, conversation, "second").status_code == 201
    assert used("user", alice.pk, "day") == {"tokens": 25, "turns": 1, "tool_calls": 0}
    assert used("user", alice.pk, "month") == {"tokens": 40, "turns": 2, "tool_calls": 0}
    assert used("assistant", "helper", "day") == {"tokens": 40, "turns": 2, "tool_calls": 0}


@pytest.mark.toolcalling(USAGE_LIMITS=[{"tokens": 10**9, "per": "user", "period": "day"}])
def test_checking_limits_does_not_read_the_history(api, model, alice):
    def turn_queries(conversation):
        api.force_authenticate(type(alice).objects.get(pk=alice.pk))  # as in a real request: permissions load afresh
        model.call("add", {"a": 1, "b": 2})
        model.reply("3")
        with CaptureQueriesContext(connection) as queries:
            assert post(api, conversation.pk, "1+2").status_code == 201
        return [q["sql"] for q in queries]

    short = Conversation.objects.create(user=alice, assistant_id="helper", title="t")
    long = Conversation.objects.create(user=alice, assistant_id="helper", title="t")
    Message.objects.bulk_create(
        Message(conversation=long, role=role, content=f"{role} {i}")
        for i in range(200)
        for role in ("user", "assistant")
    )
    # The first turn of the period looks for its counter rows, makes them and reads them: three statements.
    warm_up = turn_queries(short)
    first, second = turn_queries(short), turn_queries(long)
    assert len(first) == len(second) == len(warm_up) - 3
    counters = [sql for sql in second if "toolcalling_usagecounter" in sql]
    # Three checks (the new message, two model calls); the turn and its two answers counted, in rows the
    # process remembers for the period: the turn's count locks its rows (in the order of their ids) and reads
    # them, to refuse a turn with no room, then adds; an answer's count is one UPDATE whose subquery locks them.
    assert len(counters) == 3 + 2 + 2 * 1
    assert sum(" FOR UPDATE" in sql for sql in counters) == (3 if connection.features.has_select_for_update else 0)


@pytest.mark.django_db(transaction=True)
def test_a_model_call_counts_even_when_its_answer_is_not_stored(api, model, new_conversation, alice):
    conversation = new_conversation()

    def delete_then_answer(body):
        Conversation.objects.filter(pk=conversation).delete()  # the user deletes it while the model writes
        connections.close_all()  # this server thread's connection
        return Reply(content="Too late.", usage=Usage(30, 12))

    model.respond(delete_then_answer)
    response = post(api, conversation, "hello")
    assert response.status_code == 409 and response.json()["code"] == "turn_interrupted"
    assert used("user", alice.pk) == {"tokens": 42, "turns": 1, "tool_calls": 0}
