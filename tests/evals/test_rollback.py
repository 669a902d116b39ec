"""Each case runs in a transaction that is rolled back: an approved tool's writes, the conversation, its calls
and the approver made for the case are gone afterwards, on SQLite and PostgreSQL alike (the suite's runs)."""

from django.contrib.auth import get_user_model
from pydantic_evals import Case, Dataset

from demo_site.shop.models import Order, Product
from toolcalling.evals import AnswerContains, EvalInputs, Succeeded, ToolCalls, Transcript, evaluate
from toolcalling.evals._running import run_case
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.testing import ScriptedModel
from toolcalling.testutils import override_model, override_toolcalling

CANCEL = "Please cancel my order 20251120-0007"


def snapshot():
    order = Order.objects.get(order_no="20251120-0007")
    return order.state, list(Product.objects.order_by("sku").values_list("sku", "stock"))


@override_toolcalling(OFFLINE_MODEL=True)
def test_an_approved_cancellation_ran_and_was_rolled_back(shop):
    before = snapshot()
    users = get_user_model().objects.count()
    transcript = run_case(
        EvalInputs(assistant="shop", user="alice", message=CANCEL, decisions={"cancel_order": "approve"})
    )
    [call] = transcript.tool_calls
    assert (call.name, call.status) == ("cancel_order", ToolCall.Status.SUCCEEDED)
    assert '"state":"cancelled"' in call.result  # the tool really ran and changed the order ...
    assert transcript.status == Conversation.Status.IDLE and transcript.turns == 2
    assert snapshot() == before  # ... and none of it is left: the order, the stock,
    assert not Conversation.objects.exists() and not Message.objects.exists() and not ToolCall.objects.exists()
    assert get_user_model().objects.count() == users  # and the approver made for the case


@override_toolcalling(OFFLINE_MODEL=True)
def test_rejected_and_waiting_calls_as_the_case_says(shop):
    rejected = run_case(
        EvalInputs(
            assistant="shop",
            user="alice",
            message=CANCEL,
            decisions={"cancel_order": "reject"},
            reject_reason="shipped already",
        )  # fmt: skip
    )
    assert [c.status for c in rejected.tool_calls] == [ToolCall.Status.REJECTED]
    assert "Reason: shipped already" in rejected.reply
    waiting = run_case(EvalInputs(assistant="shop", user="alice", message=CANCEL))
    assert [c.status for c in waiting.tool_calls] == [ToolCall.Status.AWAITING_APPROVAL]
    assert waiting.status == Conversation.Status.AWAITING_APPROVAL and waiting.reply == ""
    assert snapshot()[0] == "placed"


@override_toolcalling(OFFLINE_MODEL=True)
def test_a_dataset_built_in_python_with_several_turns(shop):
    dataset = Dataset[EvalInputs, Transcript, None](
        name="python",
        cases=[
            Case(
                name="two turns",
                inputs=EvalInputs(
                    assistant="shop", user="alice", messages=["List my orders", "Where is my order 20250719-0032?"]
                ),  # fmt: skip
                evaluators=(
                    ToolCalls(calls=[{"name": "list_my_orders"}, {"name": "get_order_status"}], only=True),
                    AnswerContains("shipped"),
                ),
            ),
            Case(
                name="any order",
                inputs=EvalInputs(
                    assistant="shop", user="alice", messages=["List my orders", "Where is my order 20250719-0032?"]
                ),
                evaluators=(ToolCalls(calls=[{"name": "get_order_status"}, {"name": "list_my_orders"}]),),
            ),
        ],
    )
    _, summary = evaluate(dataset)
    outcomes = {o.name: o for o in summary.outcomes}
    assert outcomes["two turns"].passed, outcomes["two turns"].failures
    assert not outcomes["any order"].passed  # in order by default: list_my_orders came first
    assert "not called in order: list_my_orders({})" in outcomes["any order"].failures[0]
    dataset.cases[1].evaluators = [
        ToolCalls(calls=[{"name": "get_order_status"}, {"name": "list_my_orders"}], order="any_order"),
    ]
    assert evaluate(dataset)[1].all_passed


@override_toolcalling(OFFLINE_MODEL=True)
def test_a_user_from_the_cases_fixtures_is_rolled_back_with_it(shop, tmp_path):
    fixture = tmp_path / "carol.json"
    fixture.write_text(
        '[{"model": "auth.user", "pk": 990, "fields": {"username": "carol", "password": "!", "is_active": true}}]'
    )
    transcript = run_case(EvalInputs(assistant="shop", user="carol", message="List my orders", fixtures=[str(fixture)]))
    [call] = transcript.tool_calls
    assert (call.name, call.status, call.result) == ("list_my_orders", ToolCall.Status.SUCCEEDED, "[]")
    assert not get_user_model().objects.filter(username="carol").exists()


def test_a_failed_turn_is_the_transcripts_error(shop):
    with override_model(ScriptedModel()) as model:
        model.error(500, "The model is down.")
        transcript = run_case(EvalInputs(assistant="shop", user="alice", message="List my orders"))
    assert transcript.status == Conversation.Status.FAILED
    assert "The model is down." in transcript.error
    assert transcript.tool_calls == [] and transcript.reply == ""
    assert not Conversation.objects.exists()
    failed = Succeeded().evaluate(type("Context", (), {"output": transcript})())
    assert (failed.value, failed.reason) == (False, transcript.error)
