"""A result that comes too late is dropped: a tool still running when the sweep failed its call (the lease ran
out) finishes later on its worker, and the failed call, what the model was told and the conversation stay as the
sweep left them."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.approval.conftest import approved_runs_on, running_worker
from tests.approval.test_worker import final_answer, post
from tests.approvalapp.models import Counter
from tests.services import wait_until
from toolcalling import approval
from toolcalling.conf import toolcalling_settings
from toolcalling.models import Message, ToolCall

QUEUE = "approval-runs-that-overrun"


@pytest.fixture
def overrun_queue():
    with approved_runs_on(QUEUE):
        yield QUEUE


def test_a_result_after_the_sweep_failed_the_call_never_overwrites_it(
    api, ops, approver_api, worker_model, model_switchboard, overrun_queue, tmp_path
):
    _, base_url = model_switchboard
    release_file = tmp_path / "release"
    options = ("--pool=threads", "--concurrency=1", "-Q", QUEUE, "--hostname", "overrun@%h")
    with running_worker(base_url, tmp_path / "overrun.log", *options):
        worker_model.call("slow_bump", {"name": "overrun", "release_file": str(release_file)})
        call_id = post(api, ops, "bump slowly").json()["awaiting_approval"][0]["id"]
        assert approver_api.post(f"/api/toolcalling/tool-calls/{call_id}/approve/").status_code == 200
        wait_until(
            lambda: Counter.objects.filter(name="overrun", value=1).exists(), what="the tool to start on the worker"
        )
        # The sweep runs after the lease: it takes the worker to be gone, fails the call, and the model is told.
        worker_model.reply("Sorry, that may or may not have happened.")
        later = timezone.now() + timedelta(seconds=toolcalling_settings.APPROVAL_RUN_TIMEOUT + 1)
        assert [c.pk for c in approval.fail_stalled(now=later)] == [call_id]
        swept = ToolCall.objects.get(pk=call_id)
        answered = final_answer(api, ops)
        release_file.touch()  # now the tool returns "released"
    # The block ends with the worker's warm shutdown, which waits for the running task: its result came in.
    call = ToolCall.objects.get(pk=call_id)
    assert (call.status, call.error, call.result) == ("failed", approval.WORKER_STOPPED, swept.result)
    assert call.finished_at == swept.finished_at
    tool_messages = Message.objects.filter(conversation_id=ops["id"], role="tool", tool_call_id=call.call_id)
    assert list(tool_messages.values_list("content", flat=True)) == [swept.result]  # told once, by the sweep
    assert api.get(f"/api/toolcalling/conversations/{ops['id']}/messages/").json() == answered
    assert Counter.objects.get(name="overrun").value == 1  # the tool did run, once
    worker_model.assert_done()
