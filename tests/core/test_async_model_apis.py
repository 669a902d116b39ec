"""``ModelAPI.asend`` on every model API's async SDK client, streamed or not: the same replies and errors as
``send``, requests in flight together on one event loop, no thread waiting while the model answers, and a
cancelled request's response closed."""

import asyncio
import socket
import threading

import anthropic
import httpx2
import openai
import pytest

from toolcalling import Assistant
from toolcalling.conf import toolcalling_settings
from toolcalling.engine import conversation_for, drive
from toolcalling.engine._turn import Turn
from toolcalling.exceptions import ModelError
from toolcalling.hooks import ModelRequest
from toolcalling.model_apis import ModelAPI, SystemMessage, UserMessage, get_model_api, load_model_api
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.testing import Reply
from toolcalling.testing import ToolCall as ScriptedCall
from toolcalling.testing import Usage as ScriptedUsage
from toolcalling.testutils import override_toolcalling

from ..aio import CountedThreads, run
from ..stalled_stream import FIRST_EVENTS, StalledStream

ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}

# Counts given whole, cache reads too: the server would otherwise estimate them from the prompts it saw before.
USAGE = ScriptedUsage(prompt_tokens=21, completion_tokens=9, cached_tokens=0)


def ask() -> ModelRequest:
    messages = [SystemMessage("You add numbers."), UserMessage("What is 2 + 3?")]
    return ModelRequest(model=toolcalling_settings.MODEL, messages=messages, tools=[ADD])


def answer() -> Reply:
    """Text and a call, with the call's id fixed, so two requests get the same answer."""
    calls = [ScriptedCall(name="add", arguments={"a": 2, "b": 3}, id="call_add")]
    return Reply(content="Adding them now, one moment.", tool_calls=calls, usage=USAGE)


def asend(request: ModelRequest, on_delta=None, threads: CountedThreads | None = None):
    async def send():
        (threads or CountedThreads()).install()
        return await get_model_api().asend(request, on_delta=on_delta)

    return run(send())


def counting(threads: CountedThreads, seen: list[int], reply: Reply):
    """A responder that notes how many threads of the loop's executor are busy while the model answers."""

    def respond(body):
        seen.append(threads.busy)
        return reply

    return respond


@pytest.mark.each_api
@pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
def test_an_async_request_gives_the_reply_a_sync_one_gives(model, model_api, stream):
    threads, busy = CountedThreads(), []
    model.queue(answer())
    model.respond(counting(threads, busy, answer()))
    sync_deltas: list[str] = []
    async_deltas: list[str] = []
    expected = get_model_api().send(ask(), on_delta=sync_deltas.append if stream else None)
    reply = asend(ask(), on_delta=async_deltas.append if stream else None, threads=threads)

    assert busy == [0]  # no thread waited for the answer: the wait was on the event loop
    assert reply.content == expected.content == "Adding them now, one moment."
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("call_add", "add", '{"a": 2, "b": 3}')]
    assert reply.tool_calls == expected.tool_calls
    assert reply.usage == expected.usage
    assert reply.usage.prompt_tokens == 21
    assert (reply.model, reply.finish_reason) == (expected.model, expected.finish_reason)
    # Reasoning items and thinking blocks are issued anew for each answer: the same kinds come back.
    assert [item["type"] for item in reply.provider_items] == [item["type"] for item in expected.provider_items]
    assert bool(reply.reasoning) == (model_api != "chat_completions")
    if stream:
        assert "".join(async_deltas) == reply.content
        assert async_deltas == sync_deltas
    assert [body.get("stream", False) for body in model.requests] == [stream, stream]
    model.assert_done()


@pytest.mark.each_api
def test_two_async_streamed_requests_wait_for_the_model_at_the_same_time(model, model_api):
    both_asked = threading.Barrier(2, timeout=20)  # the server answers each request in a thread of its own
    threads, busy = CountedThreads(), []

    def respond(body):
        busy.append(threads.busy)
        both_asked.wait()  # broken (an error reply) unless the other request is in flight too
        return Reply(content=f"Done with {body.get('stream') and 'a stream'}.")

    model.respond(respond)
    model.respond(respond)
    deltas: tuple[list[str], list[str]] = ([], [])

    async def two_requests():
        threads.install()
        api = get_model_api()
        return await asyncio.gather(*(api.asend(ask(), on_delta=pieces.append) for pieces in deltas))

    replies = run(two_requests())
    assert busy == [0, 0]
    assert [r.content for r in replies] == ["Done with a stream.", "Done with a stream."]
    assert ["".join(pieces) for pieces in deltas] == ["Done with a stream.", "Done with a stream."]
    model.assert_done()


@pytest.mark.each_api
@pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
def test_an_error_status_is_the_model_error_a_sync_request_raises(model, model_api, stream):
    model.error(400, "The tools are not what this model takes.")
    model.error(400, "The tools are not what this model takes.")
    on_delta = (lambda text: None) if stream else None
    with pytest.raises(ModelError) as sync_error:
        get_model_api().send(ask(), on_delta=on_delta)
    with pytest.raises(ModelError) as async_error:
        asend(ask(), on_delta=on_delta)
    assert str(async_error.value) == str(sync_error.value)
    assert "400" in str(async_error.value)
    assert "The tools are not what this model takes." in str(async_error.value)


@pytest.mark.each_api
def test_an_unreachable_endpoint_is_the_model_error_a_sync_request_raises(model_api):
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now: the connection is refused
    with override_toolcalling(API=model_api, BASE_URL=f"http://127.0.0.1:{port}/v1", API_KEY="k", MAX_RETRIES=0,
                              OFFLINE_MODEL=False):  # fmt: skip
        with pytest.raises(ModelError) as sync_error:
            get_model_api().send(ask(), on_delta=lambda text: None)
        with pytest.raises(ModelError) as async_error:
            asend(ask(), on_delta=lambda text: None)
    assert str(async_error.value) == str(sync_error.value)
    assert str(async_error.value).startswith("Could not reach the model endpoint")


def watched_api(model_api: str, base_url: str, opened: list[httpx2.Response]) -> ModelAPI:
    """The model API, its async client the SDK's own with a hook that keeps every response it opens."""

    async def keep(response: httpx2.Response) -> None:
        opened.append(response)

    def build():
        if model_api == "anthropic":
            http = anthropic.DefaultAsyncHttpxClient(event_hooks={"response": [keep]})
            url = base_url.removesuffix("/v1")  # the SDK adds it
            return anthropic.AsyncAnthropic(api_key="k", base_url=url, max_retries=0, http_client=http)
        http = openai.DefaultAsyncHttpxClient(event_hooks={"response": [keep]})
        return openai.AsyncOpenAI(api_key="k", base_url=base_url, max_retries=0, http_client=http)

    return load_model_api(model_api)(None, build)


@pytest.mark.each_api
@pytest.mark.parametrize("ending", ["cancelled", "invalid_event"])
def test_a_streamed_request_that_ends_early_closes_its_response_at_once(model_api, ending):
    server = StalledStream(FIRST_EVENTS[model_api], tail="data: {not json\n\n" if ending == "invalid_event" else "")
    opened: list[httpx2.Response] = []
    deltas: list[str] = []
    closed_when_it_ended: list[bool] = []

    async def end_early():
        started = asyncio.Event()

        def on_delta(text):
            deltas.append(text)
            started.set()

        api = watched_api(model_api, server.base_url, opened)
        sending = asyncio.create_task(api.asend(ask(), on_delta=on_delta))
        await asyncio.wait_for(started.wait(), timeout=20)
        if ending == "cancelled":
            sending.cancel()
        try:
            await sending
        except (asyncio.CancelledError, ModelError) as exc:
            # Looked at before anything else runs on the loop: closed by ``asend`` itself, not by a finalizer.
            closed_when_it_ended.extend(response.is_closed for response in opened)
            return type(exc)

    try:
        with override_toolcalling(MODEL="m", MODEL_OPTIONS={}):
            raised = run(end_early())
        assert raised is (asyncio.CancelledError if ending == "cancelled" else ModelError)
        assert deltas == ["Hal"]
        assert closed_when_it_ended == [True]
        assert server.hung_up.wait(timeout=20), "the server never saw the client hang up"
    finally:
        server.close()


def stored(conversation_id) -> dict:
    """What a turn stored, without what differs between any two turns (keys, ids, times, issued signatures)."""
    conversation = Conversation.objects.get(pk=conversation_id)
    messages = Message.objects.filter(conversation=conversation).order_by("id")
    calls = ToolCall.objects.filter(conversation=conversation).order_by("id")
    totals = ("status", "prompt_tokens", "completion_tokens", "total_tokens", "reasoning_tokens")
    columns = ("role", "content", "model", "prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens",
               "reasoning_tokens", "price")  # fmt: skip
    return {
        "conversation": [getattr(conversation, name) for name in totals],
        "messages": [
            ([getattr(m, name) for name in columns], [item["type"] for item in m.provider_items or ()])
            for m in messages
        ],
        "calls": [(c.name, c.arguments, c.status, c.result) for c in calls],
    }


@pytest.mark.each_api
@pytest.mark.django_db(transaction=True)  # the async turn's writes run in Django's thread for sync code
def test_a_streamed_async_turn_stores_what_a_streamed_sync_turn_stores(model, model_api, alice):
    threads, busy = CountedThreads(), []

    def script():
        calls = [ScriptedCall(name="add", arguments={"a": 2, "b": 3})]
        usage = ScriptedUsage(prompt_tokens=41, completion_tokens=6, cached_tokens=0)
        return Reply(content="Let me add.", tool_calls=calls, usage=USAGE), Reply(content="2 + 3 = 5", usage=usage)

    for reply in script():
        model.queue(reply)
    for reply in script():
        model.respond(counting(threads, busy, reply))
    assistant = Assistant.get("helper")
    events: tuple[list, list] = ([], [])

    def streamed_turn(heard: list) -> Turn:
        conversation = conversation_for(assistant, alice, None, save=False)
        return Turn(assistant, conversation, user=alice, stream=True, listeners=[lambda *event: heard.append(event)])

    sync_turn, async_turn = streamed_turn(events[0]), streamed_turn(events[1])
    sync_turn.run("What is 2 + 3?")

    async def driven():
        threads.install()
        return await drive(async_turn, "What is 2 + 3?")

    added = run(driven())
    assert busy == [0, 0]  # the turn's steps run in Django's thread for sync code, which waits for no answer
    assert [m.role for m in added] == ["user", "assistant", "tool", "assistant"]
    expected = stored(sync_turn.conversation.pk)
    assert stored(async_turn.conversation.pk) == expected
    assert expected["messages"][-1][0][1] == "2 + 3 = 5"
    assert expected["calls"] == [("add", {"a": 2, "b": 3}, "succeeded", "5")]
    for heard in events:
        assert "".join(data["content"] for kind, data in heard if kind == "delta") == "Let me add.2 + 3 = 5"
    model.assert_done()


@pytest.mark.each_api
@pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
def test_the_offline_models_client_waits_in_a_thread_and_answers_as_sync(model_api, stream):
    threads = CountedThreads()
    with override_toolcalling(API=model_api, OFFLINE_MODEL=True, CLIENT_FACTORY=None, MODEL="m", MODEL_OPTIONS={}):
        assert get_model_api().build_async_client is None  # its async twin is unknown
        sync_deltas: list[str] = []
        async_deltas: list[str] = []
        expected = get_model_api().send(ask(), on_delta=sync_deltas.append if stream else None)
        reply = asend(ask(), on_delta=async_deltas.append if stream else None, threads=threads)
    assert threads.submitted >= 1  # the sync client's request, sent in a thread of the loop's executor
    assert reply.content
    assert (reply.content, reply.tool_calls) == (expected.content, expected.tool_calls)
    assert async_deltas == sync_deltas
    assert "".join(async_deltas) == (reply.content if stream else "")
