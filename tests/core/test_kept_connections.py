"""A streamed answer read to its end gives its connection back to the client's pool: the next request reuses it
instead of opening another (over TLS, another handshake); a server that holds a stream open after ``[DONE]``
loses its connection instead of delaying the answer."""

import pytest

from toolcalling.hooks import ModelRequest
from toolcalling.model_apis import UserMessage, get_model_api
from toolcalling.testing import OpenAICompatibleServer, Reply
from toolcalling.testutils import override_toolcalling

from ..aio import run
from ..stalled_stream import FIRST_EVENTS, StalledStream


def ask() -> ModelRequest:
    from toolcalling.conf import toolcalling_settings

    return ModelRequest(model=toolcalling_settings.MODEL, messages=[UserMessage("Hello?")], tools=[])


async def asked_in_turn(times: int) -> list[str | None]:
    api = get_model_api()
    return [(await api.asend(ask(), on_delta=lambda text: None)).content for _ in range(times)]


@pytest.mark.each_api
@pytest.mark.parametrize("side", ["sync", "async"])
def test_streamed_answers_one_after_another_share_one_connection(model, model_api, side):
    for number in range(3):
        model.queue(Reply(content=f"Answer number {number}, streamed."))
    with OpenAICompatibleServer(model) as server, override_toolcalling(BASE_URL=server.base_url):
        if side == "sync":
            api = get_model_api()
            contents = [api.send(ask(), on_delta=lambda text: None).content for _ in range(3)]
        else:
            contents = run(asked_in_turn(3))
        connections = server.connections
    assert contents == [f"Answer number {number}, streamed." for number in range(3)]
    assert [body.get("stream") for body in model.requests] == [True, True, True]
    assert connections == 1
    model.assert_done()


@pytest.mark.each_api
def test_answers_not_streamed_share_one_connection_too(model, model_api):
    model.queue(Reply(content="One."))
    model.queue(Reply(content="Two."))
    with OpenAICompatibleServer(model) as server, override_toolcalling(BASE_URL=server.base_url):
        api = get_model_api()
        contents = [api.send(ask()).content for _ in range(2)]
        connections = server.connections
    assert (contents, connections) == (["One.", "Two."], 1)


@pytest.mark.parametrize("side", ["sync", "async"])
def test_a_stream_held_open_after_done_is_answered_and_its_connection_given_up(side):
    # The stream says [DONE] but its chunked body never ends: waiting for its end would hold the answer until
    # the client's read time-out (60 s here); the client reads a moment for it, then closes the connection.
    server = StalledStream(FIRST_EVENTS["chat_completions"], tail="data: [DONE]\n\n")
    try:
        with override_toolcalling(API="chat_completions", BASE_URL=server.base_url, API_KEY="k", MAX_RETRIES=0,
                                  TIMEOUT=60, MODEL="m", MODEL_OPTIONS={}):  # fmt: skip
            deltas: list[str] = []
            if side == "sync":
                reply = get_model_api().send(ask(), on_delta=deltas.append)
            else:
                reply = run(get_model_api().asend(ask(), on_delta=deltas.append))
        assert (reply.content, deltas) == ("Hal", ["Hal"])
        assert server.hung_up.wait(timeout=20), "the client kept the held connection instead of closing it"
    finally:
        server.close()
