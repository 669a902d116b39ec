"""The demo shop, end to end through the API with the built-in offline model (no network, no API key)."""

from decimal import Decimal

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from demo_site.shop.models import Order, Product
from toolcalling.models import Conversation, ToolCall
from toolcalling.testutils import override_toolcalling

URL = "/api/toolcalling/"


@pytest.fixture
def shop(db):
    call_command("demo_setup", verbosity=0, stdout=open("/dev/null", "w"))


@pytest.fixture
def alice_api(shop, django_user_model):
    client = APIClient()
    client.force_authenticate(django_user_model.objects.get(username="alice"))
    return client


def ask(client, text, conversation=None):
    if conversation is None:
        conversation = client.post(URL + "conversations/", {"assistant": "shop"}, format="json").json()["id"]
    response = client.post(URL + f"conversations/{conversation}/messages/", {"content": text}, format="json")
    return conversation, response


def test_demo_setup_is_idempotent(shop, django_user_model):
    before = (django_user_model.objects.count(), Order.objects.count())
    call_command("demo_setup", verbosity=0, stdout=open("/dev/null", "w"))
    assert (django_user_model.objects.count(), Order.objects.count()) == before
    assert django_user_model.objects.get(username="admin").is_superuser


@override_toolcalling(OFFLINE_MODEL=True, MODEL="gpt-4o-mini")
def test_offline_model_answers_an_order_status_question(alice_api):
    _, response = ask(alice_api, "Where is my order 20250719-0032?")
    assert response.status_code == 201, response.content
    messages = response.json()["messages"]
    call = messages[1]["tool_calls"][0]
    assert (call["name"], call["arguments"], call["status"]) == (
        "get_order_status",
        {"order_no": "20250719-0032"},
        "succeeded",
    )
    assert "shipped" in messages[-1]["content"]
    # Stored as the offline model's, whatever MODEL says: nobody mistakes the demo's answers for a real model's.
    assert {m["model"] for m in messages if m["role"] == "assistant"} == {"offline"}


@override_toolcalling(OFFLINE_MODEL=True)
def test_a_customer_never_sees_another_customers_order(alice_api):
    _, response = ask(alice_api, "Where is my order 20251002-0041?")
    call = ToolCall.objects.get()
    assert call.status == "failed"
    # The details stay for the model (the call's result) and for staff; the customer reads a neutral sentence.
    assert call.result == "Error: ValueError: No order 20251002-0041 for this customer."
    reply = response.json()["messages"][-1]["content"]
    assert reply == "Get order status did not work this time. Please check the details and try again."


@override_toolcalling(OFFLINE_MODEL=True)
def test_cancelling_waits_for_approval_and_staff_get_an_email(alice_api, mailoutbox):
    conversation, response = ask(alice_api, "Please cancel my order 20251120-0007")
    body = response.json()
    assert body["status"] == "awaiting_approval"
    assert [(c["name"], c["arguments"]["order_no"]) for c in body["awaiting_approval"]] == [
        ("cancel_order", "20251120-0007")
    ]
    assert Order.objects.get(order_no="20251120-0007").state == "placed"
    (mail,) = [m for m in mailoutbox if m.subject == "Approval needed: cancel_order"]
    assert mail.to == ["admin@example.com"]
    assert "20251120-0007" in mail.body and "/admin/toolcalling/toolcall/" in mail.body
    _, again = ask(alice_api, "Hello?", conversation)
    assert again.status_code == 409
    assert Conversation.objects.get(pk=conversation).status == "awaiting_approval"


@override_toolcalling(OFFLINE_MODEL=True)
def test_buying_waits_for_the_customers_own_confirmation_with_a_preview(
    alice_api, mailoutbox, django_capture_on_commit_callbacks
):
    """The demo's call that the user confirms (``approver="user"``): the chat page's and the React example's
    Confirm / Decline, with the preview of what the purchase costs, and no staff member asked."""
    stock = Product.objects.get(sku="MUG-001").stock
    conversation, response = ask(alice_api, "Please buy 2 MUG-001")
    body = response.json()
    assert body["status"] == "awaiting_approval"
    (waiting,) = body["awaiting_approval"]
    assert (waiting["name"], waiting["arguments"], waiting["approver"]) == (
        "buy_product",
        {"sku": "MUG-001", "quantity": 2},
        "user",
    )
    preview = alice_api.get(URL + f"tool-calls/{waiting['id']}/").json()["preview"]
    assert preview["value"] == {
        "product": "Enamel camping mug (MUG-001)",
        "quantity": 2,
        "unit price": "14.90",
        "total": "29.80",
        "units in stock": stock,
    }
    assert not [m for m in mailoutbox if m.subject.startswith("Approval needed")]  # nobody else is asked

    with django_capture_on_commit_callbacks(execute=True):  # the call runs once the decision is committed
        confirmed = alice_api.post(URL + f"tool-calls/{waiting['id']}/approve/", format="json")
    assert confirmed.status_code == 200, confirmed.content
    order = Order.objects.get(customer__username="alice", lines__product__sku="MUG-001", state="placed")
    assert (order.total, [(line.quantity, line.price) for line in order.lines.all()]) == (
        Decimal("29.80"),
        [(2, Decimal("14.90"))],
    )
    assert Product.objects.get(sku="MUG-001").stock == stock - 2
    reply = alice_api.get(URL + f"conversations/{conversation}/messages/").json()[-1]["content"]
    assert order.order_no in reply and "29.80" in reply


@override_toolcalling(OFFLINE_MODEL=True)
def test_reset_takes_back_what_the_demo_bought(alice_api, django_capture_on_commit_callbacks):
    """``demo_setup --reset`` puts the demo orders back: an order bought in the demo goes, its units are on the
    shelf again."""
    stock = Product.objects.get(sku="MUG-001").stock
    orders = set(Order.objects.values_list("order_no", flat=True))
    _, response = ask(alice_api, "Please buy 2 MUG-001")
    (waiting,) = response.json()["awaiting_approval"]
    with django_capture_on_commit_callbacks(execute=True):
        alice_api.post(URL + f"tool-calls/{waiting['id']}/approve/", format="json")
    assert Order.objects.count() == len(orders) + 1

    call_command("demo_setup", reset=True, verbosity=0, stdout=open("/dev/null", "w"))
    assert set(Order.objects.values_list("order_no", flat=True)) == orders
    assert Product.objects.get(sku="MUG-001").stock == stock
