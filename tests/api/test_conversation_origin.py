"""``GET conversations/?origin=`` keeps the conversations begun in one place (the chat page and the API, Python code,
an MCP client), so a chat page can list its own; an unknown origin is a 400 naming the valid ones."""

from __future__ import annotations

import pytest

from toolcalling.models import Conversation

URL = "/api/toolcalling/conversations/"


@pytest.fixture
def begun(alice, bob) -> dict[str, Conversation]:
    """One conversation of alice's from each origin, and one of bob's from the chat."""
    made = {
        origin: Conversation.objects.create(user=alice, assistant_id="helper", origin=origin)
        for origin in "chat code mcp".split()
    }
    Conversation.objects.create(user=bob, assistant_id="helper", origin="chat")
    return made


def ids(response) -> set[str]:
    assert response.status_code == 200, response.content
    body = response.json()
    return {item["id"] for item in (body["results"] if isinstance(body, dict) else body)}


def test_origin_keeps_the_conversations_begun_there(api, begun):
    assert ids(api.get(URL + "?origin=chat")) == {str(begun["chat"].pk)}
    assert ids(api.get(URL + "?origin=code,mcp")) == {str(begun["code"].pk), str(begun["mcp"].pk)}
    assert ids(api.get(URL + "?origin=mcp&assistant=helper")) == {str(begun["mcp"].pk)}
    assert ids(api.get(URL)) == {str(c.pk) for c in begun.values()}


def test_the_conversations_show_where_they_began(api, begun):
    shown = {item["id"]: item["origin"] for item in api.get(URL).json()}
    assert shown == {str(c.pk): c.origin for c in begun.values()}


def test_an_unknown_origin_is_a_400_naming_the_valid_ones(api, begun):
    response = api.get(URL + "?origin=chat,email")
    assert response.status_code == 400
    assert response.json()["origin"] == ["Unknown origin email; one of chat, code, mcp."]
