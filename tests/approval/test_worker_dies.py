"""A worker killed while it runs an approved call: the call is never run again silently; its outcome is unknown
until a staff member says what happened, and the conversation goes on from that."""

import signal
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from tests.approval.conftest import approved_runs_on, start_worker
from tests.approval.test_worker import final_answer, post
from tests.approvalapp.models import Counter
from tests.services import wait_for_worker, wait_until
from toolcalling import approval
from toolcalling.approval._runs import WORKER_STOPPED
from toolcalling.approval._sweeps import recover_stalled
from toolcalling.conf import toolcalling_settings
from toolcalling.models import ToolCall

QUEUE = "approval-runs-that-die"


@pytest.fixture
def dying_queue():
    with approved_runs_on(QUEUE):
        yield QUEUE


def test_a_worker_killed_mid_run_leaves_the_call_to_staff_and_never_runs_it_again(
    api, ops, approver, approver_api, worker_model, model_switchboard, dying_queue, tmp_path
):
    _, base_url = model_switchboard
    log = tmp_path / "dying.log"
    # A thread pool: the task runs in the worker's own process, so SIGKILL stops it mid-run, and the
    # worker's event loop stays free to send the acknowledgement as the task starts.
    doomed = start_worker(base_url, log, "--pool=threads", "--concurrency=1", "-Q", QUEUE, "--hostname", "dying@%h")
    try:
        wait_for_worker(doomed, log)
        release_file = tmp_path / "never"
        worker_model.call("slow_bump", {"name": "doomed", "release_file": str(release_file)})
        call_id = post(api, ops, "bump slowly").json()["awaiting_approval"][0]["id"]
        assert approver_api.post(f"/api/toolcalling/tool-calls/{call_id}/approve/").status_code == 200
        wait_until(
            lambda: Counter.objects.filter(name="doomed", value=1).exists(), what="the tool to start on the worker"
        )
        assert ToolCall.objects.get(pk=call_id).status == "running"
        assert int((tmp_path / "never.pid").read_text()) == doomed.pid  # it runs on the worker we kill
        # acks_late=False: the worker acknowledged the task as it started it, before the tool finished.
        broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        wait_until(lambda: broker.hlen("unacked") == 0, what="the worker to acknowledge the task")
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait(timeout=10)

    # A new worker on the same queue finds nothing to run: the task was acknowledged when it was received.
    revived = start_worker(base_url, tmp_path / "revived.log", "-Q", QUEUE, "--hostname", "revived@%h")
    try:
        wait_for_worker(revived, tmp_path / "revived.log")
        assert broker.llen(QUEUE) == 0
        assert broker.hlen("unacked") == 0  # nothing the transport would deliver again
        assert ToolCall.objects.get(pk=call_id).status == "running"
    finally:
        revived.terminate()
        revived.wait(timeout=30)

    # The sweep (toolcalling_expire / the periodic task) finds it once the lease has ended: ``slow_bump`` may
    # not run again, so it waits for a person, who says it took effect; then the conversation goes on.
    later = timezone.now() + timedelta(seconds=toolcalling_settings.APPROVAL_RUN_TIMEOUT + 1)
    assert [(c.pk, outcome) for c, outcome in recover_stalled(now=later)] == [(call_id, "unknown")]
    call = ToolCall.objects.get(pk=call_id)
    assert (call.status, call.error) == ("outcome_unknown", WORKER_STOPPED)
    assert call.worker.endswith(f":{doomed.pid}")  # the desk says which worker ran it
    worker_model.reply("The counter was bumped before the worker stopped.")
    approval.settle(call, approver, "succeeded", "The counter shows the bump.")
    assert final_answer(api, ops)[-1]["content"] == "The counter was bumped before the worker stopped."
    assert Counter.objects.get(name="doomed").value == 1  # ran once, never again
