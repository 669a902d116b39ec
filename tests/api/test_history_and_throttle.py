"""Opt-in cursor pages of the history, the turn throttle, conversations of one assistant, and tool labels."""

import pytest
from django.test import override_settings
from django.utils.translation import gettext_lazy, override
from rest_framework.test import APIClient

from toolcalling.exceptions import ImproperlyDefined
from toolcalling.models import Conversation, Message
from toolcalling.toolkit import tool_label
from toolcalling.toolkit._tool import make_tool

URL = "/api/toolcalling/"


@pytest.fixture
def history(alice) -> Conversation:
    conversation = Conversation.objects.create(user=alice, assistant_id="helper")
    for number in range(7):
        Message.objects.create(conversation=conversation, role="user", content=f"message {number}")
    return conversation


def test_without_page_parameters_the_history_is_the_whole_list_as_before(api, history):
    body = api.get(URL + f"conversations/{history.pk}/messages/").json()
    assert [m["content"] for m in body] == [f"message {n}" for n in range(7)]


def test_page_size_asks_for_cursor_pages_newest_first(api, history):
    first = api.get(URL + f"conversations/{history.pk}/messages/?page_size=3").json()
    assert [m["content"] for m in first["results"]] == ["message 6", "message 5", "message 4"]
    assert first["previous"] is None
    second = api.get(first["next"]).json()
    third = api.get(second["next"]).json()
    assert [m["content"] for m in second["results"] + third["results"]] == [f"message {n}" for n in (3, 2, 1, 0)]
    assert third["next"] is None
    # A message added meanwhile does not shift the pages already handed out.
    Message.objects.create(conversation=history, role="user", content="message 7")
    again = api.get(first["next"]).json()
    assert [m["content"] for m in again["results"]] == ["message 3", "message 2", "message 1"]


def test_pages_are_capped_and_a_bad_cursor_is_a_404(api, history):
    body = api.get(URL + f"conversations/{history.pk}/messages/?page_size=5000").json()
    assert len(body["results"]) == 7  # at most 200, and there are only 7
    bad = api.get(URL + f"conversations/{history.pk}/messages/?cursor=nonsense")
    assert bad.status_code == 404 and bad.json()["code"] == "not_found"


def test_the_conversation_list_can_keep_one_assistants(api, alice):
    shop = Conversation.objects.create(user=alice, assistant_id="shop")
    Conversation.objects.create(user=alice, assistant_id="helper")
    body = api.get(URL + "conversations/?assistant=shop").json()
    assert [c["id"] for c in body] == [str(shop.pk)]
    assert len(api.get(URL + "conversations/").json()) == 2


THROTTLED = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_THROTTLE_RATES": {"toolcalling_turn": "2/minute"},
}


@override_settings(REST_FRAMEWORK=THROTTLED)
def test_posting_a_message_is_throttled_per_user_under_its_own_scope(api, conversation, model, bob, fresh_cache):
    url = URL + f"conversations/{conversation['id']}/messages/"
    for _ in range(2):
        model.reply("ok")
        assert api.post(url, {"content": "hi"}, format="json").status_code == 201
    refused = api.post(url, {"content": "hi"}, format="json")
    assert refused.status_code == 429
    assert refused.json()["code"] == "throttled" and refused.json()["status"] is None
    assert int(refused["Retry-After"]) > 0
    # Reading costs no tokens, and other users have their own allowance.
    assert api.get(url).status_code == 200
    other = APIClient()
    other.force_authenticate(bob)
    theirs = other.post(URL + "conversations/", {"assistant": "helper"}, format="json").json()
    model.reply("ok")
    answer = other.post(URL + f"conversations/{theirs['id']}/messages/", {"content": "hi"}, format="json")
    assert answer.status_code == 201
    model.assert_done()


def test_the_turn_rate_defaults_and_can_be_switched_off():
    from toolcalling.web import DEFAULT_TURN_RATE, TurnRateThrottle

    with override_settings(REST_FRAMEWORK={}):
        assert TurnRateThrottle().get_rate() == DEFAULT_TURN_RATE == "20/minute"
    with override_settings(REST_FRAMEWORK={"DEFAULT_THROTTLE_RATES": {"toolcalling_turn": None}}):
        assert TurnRateThrottle().rate is None
    with override_settings(REST_FRAMEWORK={"DEFAULT_THROTTLE_RATES": {"toolcalling_turn": "100/day"}}):
        assert TurnRateThrottle().get_rate() == "100/day"


def test_a_tools_label_defaults_to_its_name_humanised():
    def cancel_order(order_no: str) -> str:
        """Cancel an order."""
        return order_no

    def getOrderStatus(order_no: str) -> str:  # noqa: N802
        """Look it up."""
        return order_no

    assert make_tool(cancel_order).label == "Cancel order"
    assert make_tool(getOrderStatus).label == "Get order status"
    assert make_tool(cancel_order, label="Cancel an order").label == "Cancel an order"
    with pytest.raises(ImproperlyDefined, match="label must not be empty"):
        make_tool(cancel_order, label=" ")


def test_a_label_may_be_a_lazy_translation(settings):
    def refund(amount: int) -> str:
        """Refund."""
        return str(amount)

    tool = make_tool(refund, label=gettext_lazy("Refund an order"))
    with override("de"):
        assert str(tool.label) == "Refund an order"  # no German catalogue: the text as written


def test_labels_reach_the_api_and_the_events(api, conversation, model):
    from toolcalling import Assistant

    model.call("add", {"a": 1, "b": 2})
    model.reply("3")
    url = URL + f"conversations/{conversation['id']}/messages/"
    body = api.post(url, {"content": "1+2?"}, format="json").json()
    call = body["messages"][1]["tool_calls"][0]
    assert (call["name"], call["label"]) == ("add", "Add")
    assert tool_label("add") == "Add" and tool_label("gone_tool") == "Gone tool"

    events = []
    model.call("whoami", {})
    model.reply("You are alice.")
    Assistant.get("helper").run(
        Conversation.objects.get(pk=conversation["id"]).user,
        "Who am I?",
        Conversation.objects.get(pk=conversation["id"]),
        listeners=[lambda type, data: events.append((type, data))],
    )
    described = [d for t, d in events if t in ("tool_call_started", "tool_call_finished")]
    assert described and all(d["label"] == "Whoami" for d in described)
    message_calls = [c for t, d in events if t == "message" for c in d.get("tool_calls", [])]
    assert [c["label"] for c in message_calls] == ["Whoami"]
    model.assert_done()
