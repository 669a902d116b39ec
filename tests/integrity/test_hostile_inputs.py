"""Input from the model that once answered 500: arguments nested 600 deep are invalid arguments the model reads
(as the contract has it), a usage count of 10**30 or 2**63 is a ``model_error``; in a plain, a streamed and a
background turn, with and without ATOMIC_REQUESTS, on every database. Nothing is left half stored or ``running``."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.db import connections
from rest_framework.test import APIClient

from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.testing import Reply, Usage

from .conftest import answers_per_call, history_problems, post_turn

MODES = ["json", "stream", "background"]


@pytest.fixture(params=[False, True], ids=["autocommit", "atomic_requests"])
def site(request, transactional_db, alice) -> Iterator[APIClient]:
    settings_dict = connections["default"].settings_dict
    saved = settings_dict.get("ATOMIC_REQUESTS", False)
    settings_dict["ATOMIC_REQUESTS"] = request.param
    api = APIClient()
    api.force_authenticate(alice)
    yield api
    settings_dict["ATOMIC_REQUESTS"] = saved


def nested(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


@pytest.mark.parametrize("mode", MODES)
def test_arguments_nested_600_deep_go_back_to_the_model_as_invalid(site, alice, model, mode):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    model.call("add", '{"a": ' + nested(600) + ', "b": 1}')
    model.reply("I will call it properly.")
    status, _answer = post_turn(site, conversation.pk, "Add them.", mode)
    assert status == {"json": 201, "stream": 200, "background": 202}[mode]
    conversation.refresh_from_db()
    assert conversation.status == "idle", conversation.error
    call = ToolCall.objects.get(conversation=conversation)
    assert call.status == "failed" and call.arguments == {}
    told = model.messages(-1)[-1]["content"]
    assert told.startswith("Error: invalid arguments for add: arguments are nested more than 32 levels deep")
    assert answers_per_call(conversation.pk) == {call.call_id: 1} and history_problems(conversation.pk) == []
    model.assert_done()


@pytest.mark.parametrize("count", [10**30, 2**63, 2**31])  # 2**31: more than a 32-bit column holds
@pytest.mark.parametrize("mode", MODES)
def test_a_usage_count_out_of_range_is_a_model_error_and_the_next_turn_gets_in(site, alice, model, mode, count):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    model.queue(Reply(content="Expensive.", usage=Usage(prompt_tokens=count, completion_tokens=1)))
    status, answer = post_turn(site, conversation.pk, "Hello?", mode)
    conversation.refresh_from_db()
    assert conversation.status == "failed" and "out of range" in conversation.error
    if mode == "json":
        assert status == 502 and answer["code"] == "model_error" and answer["status"] == "failed"
    elif mode == "stream":
        assert [e["type"] for e in answer][-2:] == ["error", "turn_end"] and answer[-1]["status"] == "failed"
    # The user's message is kept, nothing of the answer, and no count of it.
    assert list(Message.objects.filter(conversation=conversation).values_list("role", flat=True)) == ["user"]
    assert (conversation.prompt_tokens, conversation.total_tokens) == (0, 0)
    model.reply("Cheap.", usage=(10, 2))
    status, _answer = post_turn(site, conversation.pk, "Again?", mode)
    conversation.refresh_from_db()
    assert conversation.status == "idle" and conversation.total_tokens == 12
    assert history_problems(conversation.pk) == []
    model.assert_done()


def test_the_largest_count_accepted_is_stored_whole(site, alice, model):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    model.reply("Big.", usage=(2**30 - 1, 2**30 - 1))
    status, answer = post_turn(site, conversation.pk, "Hello?", "json")
    assert status == 201, json.dumps(answer)[:300]
    stored = Message.objects.get(conversation=conversation, role="assistant")
    assert (stored.prompt_tokens, stored.total_tokens) == (2**30 - 1, 2**31 - 2)
