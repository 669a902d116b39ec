"""An approval rule (``requires_approval=callable``) that raises fails closed: the tool does not run, the call is
answered as failed with the rule's error, and nothing waits for a decision."""

from collections.abc import Iterator

import pytest

from tests.approvalapp.models import Counter
from toolcalling import Assistant, ToolContext, tool
from toolcalling.exceptions import ToolExecutionError
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.toolkit import assistants, tools

LIMITS = {"EUR": 100}  # what may move without a staff member, per currency


def transfer_needs_approval(ctx: ToolContext, args: dict) -> bool:
    return args["amount"] > LIMITS[args["currency"]]  # KeyError for a currency the site never priced


@pytest.fixture
def ledger(api) -> Iterator[dict]:
    """A conversation of alice's with an assistant whose one tool is gated by a rule that can raise."""

    @tool(requires_approval=transfer_needs_approval)
    def transfer(ctx: ToolContext, currency: str, amount: int) -> str:
        """Move money to the reserve account."""
        Counter.objects.create(name=f"transfer-{currency}", value=amount)
        return f"moved {amount} {currency}"

    class LedgerAssistant(Assistant):
        id = "ledger-rule-test"
        tools = ["transfer"]

    try:
        response = api.post("/api/toolcalling/conversations/", {"assistant": LedgerAssistant.id}, format="json")
        assert response.status_code == 201, response.content
        yield response.json()
    finally:
        assistants.unregister(LedgerAssistant.id)
        tools.unregister("transfer")


def post(api, conversation, content):
    url = f"/api/toolcalling/conversations/{conversation['id']}/messages/"
    return api.post(url, {"content": content}, format="json")


def test_a_rule_that_raises_does_not_let_the_tool_run(api, ledger, model):
    model.call("transfer", {"currency": "XYZ", "amount": 5})
    model.reply("I could not check that transfer, so I did not make it.")
    response = post(api, ledger, "move 5 XYZ")
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "idle" and response.json()["awaiting_approval"] == []
    call = ToolCall.objects.get(conversation_id=ledger["id"])
    assert (call.status, call.requires_approval) == ("failed", False)
    assert call.error == "Error: KeyError: 'XYZ'"
    assert not Counter.objects.filter(name="transfer-XYZ").exists()  # the tool never ran
    told = Message.objects.get(conversation_id=ledger["id"], role="tool", tool_call_id=call.call_id).content
    assert told == "Error: KeyError: 'XYZ'"
    assert [m["content"] for m in model.messages(1) if m["role"] == "tool"] == [told]
    assert Conversation.objects.get(pk=ledger["id"]).status == "idle"
    model.assert_done()


def test_the_same_rule_still_gates_and_passes_calls_it_can_judge(api, ledger, model):
    model.calls(("transfer", {"currency": "EUR", "amount": 5}), ("transfer", {"currency": "EUR", "amount": 500}))
    response = post(api, ledger, "move 5 EUR, then 500 EUR")
    assert response.status_code == 201, response.content
    small, large = ToolCall.objects.filter(conversation_id=ledger["id"]).order_by("index")
    assert (small.status, large.status) == ("succeeded", "awaiting_approval")
    assert Counter.objects.get(name="transfer-EUR").value == 5  # only the small one ran
    model.assert_done()


@pytest.mark.toolcalling(TOOL_ERRORS="raise")
def test_under_raise_the_rules_own_error_is_the_cause_of_the_turns(alice, ledger, model):
    model.call("transfer", {"currency": "XYZ", "amount": 5})
    with pytest.raises(ToolExecutionError, match="KeyError") as raised:
        Assistant.get("ledger-rule-test").run(alice, "move 5 XYZ", Conversation.objects.get(pk=ledger["id"]))
    assert isinstance(raised.value.__cause__, KeyError)  # the site's own traceback, for its error reports
    assert not Counter.objects.filter(name="transfer-XYZ").exists()
    model.assert_done()
