"""Tool search: one search tool instead of 100, found tools offered next and remembered per conversation."""

import json

from toolcalling import Assistant
from toolcalling.models import Conversation
from toolcalling.toolkit._search import ToolIndex, tokenize

from .catalog import CATALOG


def offered(request):
    """The names of the tools a request offered, on any model API."""
    return [t.get("function", t)["name"] for t in request.get("tools", [])]


def test_names_split_on_underscores_and_camel_case():
    assert tokenize("getOrderStatus") == tokenize("get_order_status") == ["get", "order", "statu"]
    assert tokenize("HTTPRequests") == ["http", "request"]


def test_the_index_ranks_the_fitting_tool_first():
    index = ToolIndex(CATALOG)
    assert index.search("cancel an order")[0].name == "cancel_order"
    assert index.search("export invoices as CSV for accounting")[0].name == "export_invoices"
    assert "shipment" in index.search("tracking number of a parcel")[0].name
    assert index.search("zzz qqq") == []


def test_tool_search_offers_one_tool_then_what_it_found_and_remembers_it(strict_model, alice):
    strict_model.call("search_tools", {"query": "cancel an order"})
    strict_model.call("cancel_order", {"order_id": "A-1"})
    strict_model.reply("Cancelled.")
    result = Assistant.get("lf_search").run(alice, "Cancel order A-1")

    first, second, third = strict_model.requests
    assert offered(first) == ["search_tools"]
    found = json.loads(result.tool_calls[0].result)["tools"]
    assert found[0]["name"] == "cancel_order"
    assert offered(second) == ["search_tools", *(t["name"] for t in found)]
    assert len(offered(second)) < len(CATALOG) / 10
    assert json.loads(result.tool_calls[1].result) == {
        "tool": "cancel_order",
        "ok": True,
        "order_id": "A-1",
        "note": None,
    }
    assert result.reply == "Cancelled."

    # A new turn, with the conversation read back from the database (as after a restart), still offers them.
    conversation = Conversation.objects.get(pk=result.conversation.pk)
    assert conversation.state["tool_search"]["found"][0] == "cancel_order"
    strict_model.call("search_tools", {"query": "refund money"})
    strict_model.reply("ok")
    Assistant.get("lf_search").run(alice, "And refund it", conversation)
    assert offered(strict_model.requests[3]) == offered(second)
    assert "create_refund" in offered(strict_model.requests[4])
    assert offered(strict_model.requests[4])[: len(offered(second))] == offered(second)


def test_without_tool_search_every_tool_is_offered(strict_model, alice, settings):
    strict_model.reply("hi")
    Assistant.get("lf_no_search").run(alice, "hi")
    assert len(offered(strict_model.requests[0])) == 100

    settings.TOOLCALLING = {**settings.TOOLCALLING, "TOOL_SEARCH_THRESHOLD": 100}
    strict_model.reply("hi")
    Assistant.get("lf_search").run(alice, "hi")  # tool_search = None, and 100 is not above 100
    assert len(offered(strict_model.requests[1])) == 100


def test_a_small_assistant_does_not_use_tool_search(strict_model, alice):
    strict_model.reply("hi")
    Assistant.get("helper").run(alice, "hi")
    assert "search_tools" not in offered(strict_model.requests[0])
