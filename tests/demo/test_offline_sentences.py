"""The offline model tells a tool's result in sentences a demo visitor reads, from any dict or list: what the result
is about first, nested rows one a line, keys as words (never ``unit_price: 14.90; sku: …``), and its own few words
in the request's language."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings
from django.utils import translation

from tests.demo.test_demo_shop import alice_api, ask, shop  # noqa: F401  (fixtures, used by name below)
from toolcalling.contrib.offline._sentences import describe
from toolcalling.testutils import override_toolcalling

ORDER = {
    "order_no": "20250719-0032",
    "state": "shipped",
    "eta": "2025-07-23",
    "total": "42.00",
    "placed_on": "2025-07-19",
    "gift": False,
    "note": None,
    "items": [
        {"sku": "MUG-001", "name": "Mug", "quantity": 2, "unit_price": "14.90"},
        {"sku": "TEE-002", "name": "T-shirt", "quantity": 1, "unit_price": "12.20"},
    ],
}


def told(result: object, name: str = "get_order_status") -> list[str]:
    return describe(name, json.dumps(result), named=False)


def test_a_dict_is_told_about_its_subject_with_its_rows_one_a_line():
    assert told(ORDER) == [
        "Order number 20250719-0032: the state is shipped, the ETA is 2025-07-23, the total is 42.00, "
        "placed on 2025-07-19, the gift is no and the note is not set.",
        "Items (2):",
        "- Mug: SKU MUG-001, quantity 2, unit price 14.90",
        "- T-shirt: SKU TEE-002, quantity 1, unit price 12.20",
    ]


def test_a_list_says_how_many_were_found_and_names_each():
    rows = [{"order_no": "A-1", "state": "placed", "total": "3.00"}, {"title": "Lamp", "price": {"eur": "9.00"}}]
    assert told(rows, "list_my_orders") == [
        "I found 2 items:",
        "- Order number A-1: state placed, total 3.00",
        "- Lamp: price (eur 9.00)",
    ]
    assert told(["red", "blue"]) == ["I found 2 items:", "- red", "- blue"]
    assert told([], "search_products") == ["Search products found nothing."]
    assert told({}) == ["Get order status returned no details."]
    assert told({"error": "Order not found"}) == ["Get order status did not work: Order not found."]


def test_a_result_without_a_subject_is_one_sentence_of_its_facts():
    assert told({"can_be_cancelled": True, "reason": "late", "shipped_by": "DHL"}) == [
        "Can be cancelled: yes, the reason is late and shipped by DHL."
    ]
    assert told(42) == ["42."]


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        ("de", ["Ich habe 2 Einträge gefunden:", "- Order number A-1: state nicht angegeben", "- Lamp: sold ja"]),
        ("ko", ["2개를 찾았습니다:", "- Order number A-1: state 없음", "- Lamp: sold 예"]),
    ],
)
def test_the_models_own_words_are_in_the_requests_language(language, expected):
    rows = [{"order_no": "A-1", "state": None}, {"name": "Lamp", "sold": True}]
    with translation.override(language):
        assert told(rows) == expected
        assert told({"order_no": "A-1", "paid": True, "gift": False})[0].endswith(
            {"de": "paid ist ja und gift ist nein.", "ko": "paid: 예, gift: 아니요."}[language]
        )


@override_toolcalling(OFFLINE_MODEL=True)
def test_the_demo_shop_answers_an_order_question_in_sentences(alice_api):  # noqa: F811
    _, response = ask(alice_api, "Where is my order 20250719-0032?")
    assert response.status_code == 201, response.content
    answer = response.json()["messages"][-1]["content"]
    assert answer.startswith("Order number 20250719-0032: the state is shipped, the ETA is")
    assert "\n- " in answer and "unit price" in answer
    assert "_" not in answer and "; " not in answer


@override_toolcalling(OFFLINE_MODEL=True)
def test_the_demo_shop_answers_in_the_sites_language(alice_api):  # noqa: F811
    with override_settings(LANGUAGE_CODE="de"):
        _, response = ask(alice_api, "Which orders do I have? list my orders")
    assert response.status_code == 201, response.content
    answer = response.json()["messages"][-1]["content"]
    assert answer.startswith("Ich habe ") and " gefunden:" in answer.splitlines()[0]
