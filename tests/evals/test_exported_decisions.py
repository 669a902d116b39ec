""" "Add to the eval dataset" exports only the decisions a person made: an approved call as ``approve``, a rejected
one as ``reject``; a call the user cancelled (or a stop withdrew) is ``cancel``, one that expired ``expire``, never
``approve``. Running such a case never runs the tool: the cancel and the expiry are replayed, and the order the
demo's ``cancel_order`` would cancel is untouched while the case runs."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from demo_site.shop.models import Order
from toolcalling import Assistant, approval
from toolcalling.evals import EvalInputs
from toolcalling.evals._running import run_case
from toolcalling.evals.cases import case_from_conversation
from toolcalling.models import Conversation, ToolCall
from toolcalling.testutils import override_toolcalling

CANCEL = "Please cancel my order 20251120-0007"
ORDER = "20251120-0007"


def waiting_cancellation():
    alice = get_user_model().objects.get(username="alice")
    conversation = Assistant.get("shop").run(alice, CANCEL).conversation
    [call] = conversation.tool_calls.all()
    assert call.status == ToolCall.Status.AWAITING_APPROVAL
    return alice, conversation


def replay(case, monkeypatch):
    """Run the exported case, failing the test at once if the tool's function is called."""
    ran = []
    original = Order.save

    def watched(self, *args, **kwargs):
        if self.state == Order.State.CANCELLED:
            ran.append(self.order_no)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Order, "save", watched)
    transcript = run_case(EvalInputs(**case["inputs"]))
    assert ran == []  # the tool never ran, not even inside the rolled-back transaction
    return transcript


@override_toolcalling(OFFLINE_MODEL=True)
def test_a_call_the_user_cancelled_is_exported_as_cancelled_and_never_runs(shop, monkeypatch):
    alice, conversation = waiting_cancellation()
    approval.cancel_waiting(conversation, alice)

    case = case_from_conversation(conversation)
    assert case["inputs"]["decisions"] == {"cancel_order": "cancel"}
    transcript = replay(case, monkeypatch)
    assert [c.status for c in transcript.tool_calls] == [ToolCall.Status.CANCELLED]
    assert transcript.status == Conversation.Status.IDLE and transcript.error == ""
    assert Order.objects.get(order_no=ORDER).state == "placed"


@override_toolcalling(OFFLINE_MODEL=True)
def test_a_call_that_expired_is_exported_as_expired_and_never_runs(shop, monkeypatch):
    _, conversation = waiting_cancellation()
    [expired] = approval.expire(now=timezone.now() + timedelta(days=30))
    assert expired.conversation_id == conversation.pk

    case = case_from_conversation(conversation)
    assert case["inputs"]["decisions"] == {"cancel_order": "expire"}
    transcript = replay(case, monkeypatch)
    assert [c.status for c in transcript.tool_calls] == [ToolCall.Status.EXPIRED]
    assert "expired" in transcript.tool_calls[0].result
    assert transcript.status == Conversation.Status.IDLE and transcript.error == ""  # the model was told, and answered
    assert Order.objects.get(order_no=ORDER).state == "placed"


@override_toolcalling(OFFLINE_MODEL=True)
def test_a_call_a_stop_withdrew_is_exported_as_cancelled_not_approved(shop, monkeypatch):
    _, conversation = waiting_cancellation()
    # What a stopped turn leaves of a call that waited: cancelled, and decided by nobody.
    ToolCall.objects.filter(conversation=conversation).update(status=ToolCall.Status.CANCELLED)

    case = case_from_conversation(conversation)
    assert case["inputs"]["decisions"] == {"cancel_order": "cancel"}
    assert [c.status for c in replay(case, monkeypatch).tool_calls] == [ToolCall.Status.CANCELLED]


@override_toolcalling(OFFLINE_MODEL=True)
def test_only_a_call_a_person_approved_is_exported_as_approved(shop):
    _, conversation = waiting_cancellation()
    [call] = conversation.tool_calls.all()
    admin = get_user_model().objects.get(username="admin")
    approval.approve(call, admin)  # eager: it runs on commit
    call.refresh_from_db()
    assert call.status == ToolCall.Status.SUCCEEDED
    assert case_from_conversation(conversation)["inputs"]["decisions"] == {"cancel_order": "approve"}

    # Ran without a decision anyone recorded (no decided_at): not an approval to replay.
    ToolCall.objects.filter(pk=call.pk).update(decided_at=None, decided_by=None)
    assert case_from_conversation(conversation)["inputs"]["decisions"] == {"cancel_order": "wait"}


@override_toolcalling(OFFLINE_MODEL=True)
def test_a_tool_is_approved_in_a_case_only_when_every_call_of_it_was(shop):
    alice, conversation = waiting_cancellation()
    [first] = conversation.tool_calls.all()
    approval.approve(first, get_user_model().objects.get(username="admin"))
    Assistant.get("shop").run(alice, "Please cancel my order 20251120-0008", conversation)
    approval.cancel_waiting(conversation, alice)
    statuses = list(conversation.tool_calls.order_by("id").values_list("status", flat=True))
    assert statuses == [ToolCall.Status.SUCCEEDED, ToolCall.Status.CANCELLED]
    assert case_from_conversation(conversation)["inputs"]["decisions"] == {"cancel_order": "cancel"}
