"""Property tests: random nesting, sizes, Unicode (lone surrogates, NUL) and numbers fed to the chat API, the MCP
endpoint, the admin's change form and the model's replies never make a 500, and leave a sound history."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcalling.models import Conversation, ToolCall
from toolcalling.testing import Reply, Usage
from toolcalling.testing import ToolCall as ScriptedCall

from .conftest import history_problems

pytestmark = pytest.mark.django_db

# Modest example counts: the suite's time matters; each example is a request (or a turn) on the real stack.
SOME = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Any code point, lone surrogates and NUL included (hypothesis leaves surrogates out unless told); text drawn
# often from the troublesome ones, which any code point alone would rarely be.
CHARS = st.characters(exclude_categories=())
TEXT = st.one_of(st.text(CHARS, max_size=40), st.text(st.sampled_from(["\ud800", "\udfff", "\x00", "한", "a"])))
# Numbers past every column's range as often as within them.
HUGE = st.one_of(st.integers(min_value=2**31, max_value=2**63), st.integers(min_value=2**63, max_value=2**70))
NUMBERS = st.one_of(
    st.integers(min_value=-(2**31), max_value=2**31), HUGE, st.floats(allow_nan=False, allow_infinity=False)
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                      max_leaves=12)  # fmt: skip


@st.composite
def deep(draw: Any, value: Any = VALUES) -> Any:
    """A value wrapped in up to 700 levels of arrays or objects: past every depth limit, and within them."""
    levels = draw(st.one_of(st.integers(0, 6), st.integers(30, 40), st.integers(500, 700)))
    inner = draw(value)
    for _ in range(levels):
        inner = [inner] if draw(st.booleans()) else {"k": inner}
    return inner


JSON_VALUES = st.one_of(VALUES, deep())


def dumps(value: Any) -> str:
    """JSON text as a client sends it: surrogates escaped (\\ud800), so the body is valid UTF-8."""
    return json.dumps(value)


def drain(model: Any) -> None:
    """Drop replies a refused request left queued, so the next example starts with none."""
    model._queue.clear()  # the scripted model has no public way to take back what a test queued


@SOME
@given(body=st.dictionaries(st.sampled_from(["content", "attachments", "background", "x"]), JSON_VALUES, max_size=3))
def test_the_chat_api_answers_any_body_without_a_500(api, alice, model, body):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    model.reply("Fine.")
    url = f"/api/toolcalling/conversations/{conversation.pk}/messages/"
    response = api.generic("POST", url, dumps(body), content_type="application/json")
    drain(model)
    assert response.status_code in (201, 202, 400, 413), response.content[:300]
    conversation.refresh_from_db()
    assert conversation.status in ("idle", "failed")
    assert history_problems(conversation.pk) == []


# Mostly well-formed messages, so most reach the methods (a call of "add" its tool) with hostile parts inside.
CALL = st.fixed_dictionaries(
    {
        "name": st.one_of(TEXT, st.sampled_from(["add", "delete_everything"])),
        "arguments": st.one_of(JSON_VALUES, st.fixed_dictionaries({"a": JSON_VALUES})),
    }
)
DISCOVER = st.fixed_dictionaries({"_meta": JSON_VALUES})
MESSAGES = st.one_of(
    st.builds(lambda id, params: {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params},
              st.integers(), CALL),
    st.builds(lambda id, params: {"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": params},
              st.integers(), DISCOVER),
    st.fixed_dictionaries({"jsonrpc": st.sampled_from(["2.0", "1.0"]), "id": st.one_of(st.integers(), TEXT),
                           "method": st.one_of(TEXT, st.sampled_from(["initialize", "ping", "tools/list"]))},
                          optional={"params": JSON_VALUES}),
)  # fmt: skip


@SOME
@given(payload=st.one_of(MESSAGES, st.lists(MESSAGES, max_size=25), JSON_VALUES), raw=st.binary(max_size=60))
def test_the_mcp_endpoint_answers_any_message_without_a_500(api, payload, raw):
    for body in (dumps(payload), raw):
        response = api.generic("POST", "/api/toolcalling/mcp/helper/", body, content_type="application/json")
        assert response.status_code in (200, 202, 400), response.content[:300]
        if response.status_code != 202:
            answer = response.json()
            for reply in answer if isinstance(answer, list) else [answer]:
                assert reply["jsonrpc"] == "2.0" and ("result" in reply or "error" in reply)
    assert all(c.status in ("idle", "failed", "awaiting_approval") for c in Conversation.objects.all())


@pytest.fixture
def staff(db):
    user = get_user_model().objects.create_user("sam", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["approve_toolcall", "change_toolcall",
                                                                      "view_toolcall"]))  # fmt: skip
    client = Client()
    client.force_login(user)
    return client


@SOME
@given(arguments=st.one_of(JSON_VALUES.map(dumps), TEXT))
def test_the_admin_change_form_answers_any_arguments_without_a_500(api, alice, model, staff, arguments):
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    model.call("delete_everything", {"confirm": "yes"})
    url = f"/api/toolcalling/conversations/{conversation.pk}/messages/"
    assert api.post(url, {"content": "go"}, format="json").status_code == 201
    call = ToolCall.objects.get(conversation=conversation)
    # As a browser sends the form: URL-encoded UTF-8 (a lone surrogate as the bytes it encodes to, not UTF-8).
    form = urlencode({"arguments": arguments.encode("utf-8", "surrogatepass")})
    url = f"/admin/toolcalling/toolcall/{call.pk}/change/"
    response = staff.generic("POST", url, form, content_type="application/x-www-form-urlencoded")
    assert response.status_code in (200, 302), response.content[:300]
    call.refresh_from_db()
    assert call.status == "awaiting_approval" and isinstance(call.arguments, dict)
    if response.status_code == 302:  # saved: what the tool's signature accepts, nothing else
        assert set(call.arguments) == {"confirm"} and isinstance(call.arguments["confirm"], str)


COUNTS = st.one_of(st.none(), st.integers(min_value=0, max_value=2**31), HUGE)


@SOME
@given(
    content=st.one_of(st.none(), TEXT, st.text(CHARS, min_size=1000, max_size=5000)),
    arguments=st.one_of(deep().map(dumps), JSON_VALUES.map(dumps), TEXT),
    usage=st.tuples(COUNTS, COUNTS),
    with_call=st.booleans(),
)
def test_any_model_reply_is_stored_soundly_or_refused_as_a_model_error(api, alice, model, content, arguments, usage,
                                                                      with_call):  # fmt: skip
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    counts = Usage(prompt_tokens=usage[0], completion_tokens=usage[1])
    calls = [ScriptedCall("add", arguments)] if with_call else []
    model.queue(Reply(content=content, tool_calls=calls, usage=counts))
    model.reply("Done.")
    url = f"/api/toolcalling/conversations/{conversation.pk}/messages/"
    response = api.post(url, {"content": "Go."}, format="json")
    drain(model)
    assert response.status_code in (201, 502), response.content[:300]
    conversation.refresh_from_db()
    if response.status_code == 502:
        assert response.json()["code"] == "model_error" and conversation.status == "failed"
    else:
        assert conversation.status == "idle"
    assert history_problems(conversation.pk) == []
