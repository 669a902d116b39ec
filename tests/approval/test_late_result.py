"""A tool still running when the sweep took its worker for dead (the lease ran out) finishes later on its worker:
while nobody has said what happened, its result is what happened and the conversation goes on from it; once a
person has, the late result is dropped and the call, what the model was told and the conversation stay as they
were."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.approval.conftest import approved_runs_on, running_worker
from tests.approval.test_worker import final_answer, post
from tests.approvalapp.models import Counter
from tests.services import wait_until
from toolcalling import approval
from toolcalling.approval._sweeps import recover_stalled
from toolcalling.conf import toolcalling_settings
from toolcalling.models import Message, ToolCall

QUEUE = "approval-runs-that-overrun"


@pytest.fixture
def overrun_queue():
    with approved_runs_on(QUEUE):
        yield QUEUE


def slow_run_taken_for_dead(api, ops, approver_api, worker_model, release_file):
    """An approved ``slow_bump`` running on the worker, which the sweep (after the lease) leaves to a person."""
    worker_model.call("slow_bump", {"name": "overrun", "release_file": str(release_file)})
    call_id = post(api, ops, "bump slowly").json()["awaiting_approval"][0]["id"]
    assert approver_api.post(f"/api/toolcalling/tool-calls/{call_id}/approve/").status_code == 200
    wait_until(lambda: Counter.objects.filter(name="overrun", value=1).exists(), what="the tool to start on the worker")
    later = timezone.now() + timedelta(seconds=toolcalling_settings.APPROVAL_RUN_TIMEOUT + 1)
    assert [c.pk for c, _ in recover_stalled(now=later)] == [call_id]
    assert ToolCall.objects.get(pk=call_id).status == "outcome_unknown"
    return call_id


def test_a_late_result_settles_a_call_whose_outcome_nobody_has_settled_yet(
    api, ops, approver_api, worker_model, model_switchboard, overrun_queue, tmp_path
):
    _, base_url = model_switchboard
    release_file = tmp_path / "release"
    options = ("--pool=threads", "--concurrency=1", "-Q", QUEUE, "--hostname", "overrun@%h")
    with running_worker(base_url, tmp_path / "overrun.log", *options):
        call_id = slow_run_taken_for_dead(api, ops, approver_api, worker_model, release_file)
        worker_model.reply("Bumped, after a while.")
        release_file.touch()  # now the tool returns "released"
        answered = final_answer(api, ops)
    call = ToolCall.objects.get(pk=call_id)
    assert (call.status, call.result) == ("succeeded", "released")
    assert answered[-1]["content"] == "Bumped, after a while."
    assert Counter.objects.get(name="overrun").value == 1  # the tool did run, once
    worker_model.assert_done()


def test_a_result_after_a_person_settled_the_call_never_overwrites_it(
    api, ops, approver, approver_api, worker_model, model_switchboard, overrun_queue, tmp_path
):
    _, base_url = model_switchboard
    release_file = tmp_path / "release"
    options = ("--pool=threads", "--concurrency=1", "-Q", QUEUE, "--hostname", "overrun@%h")
    with running_worker(base_url, tmp_path / "overrun.log", *options):
        call_id = slow_run_taken_for_dead(api, ops, approver_api, worker_model, release_file)
        worker_model.reply("Sorry, that did not happen.")
        approval.settle(ToolCall.objects.get(pk=call_id), approver, "failed", "The counter did not change.")
        swept = ToolCall.objects.get(pk=call_id)
        answered = final_answer(api, ops)
        release_file.touch()
    # The block ends with the worker's warm shutdown, which waits for the running task: its result came in.
    call = ToolCall.objects.get(pk=call_id)
    assert (call.status, call.result) == ("failed", swept.result)
    assert call.finished_at == swept.finished_at
    tool_messages = Message.objects.filter(conversation_id=ops["id"], role="tool", tool_call_id=call.call_id)
    assert list(tool_messages.values_list("content", flat=True)) == [swept.result]  # told once, by the person
    assert api.get(f"/api/toolcalling/conversations/{ops['id']}/messages/").json() == answered
    assert Counter.objects.get(name="overrun").value == 1  # the tool did run, once
    worker_model.assert_done()
