"""What holds on either task runner (``TOOLCALLING["TASKS"]``: Celery's worker, Django's Tasks on a db_worker): the
sweep, run as a task on the worker, continues what a lost continuation left waiting; and a worker started without
the model's settings says so as it starts, and the continuation that fails there names them; and background
messages racing for one conversation run one turn there. A db_worker killed mid-run never runs the call again,
as a Celery worker does not (tests/approval/test_worker_dies.py)."""

import signal
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from tests import services
from tests.approval.conftest import WORKER_ENV
from tests.approval.test_worker import final_answer, gated_call, race
from tests.approvalapp.models import Counter
from tests.celery_app import app as celery_app
from toolcalling import approval, engine
from toolcalling.approval._runs import WORKER_STOPPED
from toolcalling.conf import toolcalling_settings
from toolcalling.models import Conversation, Message, ToolCall


def queue_on(task_runner, name, *args, queue=None):
    """Queue the task ``name`` on the runner, as the app would, or on ``queue`` (only a test's own worker reads it)."""
    if task_runner == "django":
        from toolcalling import django_tasks

        task = getattr(django_tasks, name.removeprefix("toolcalling."))
        (task.using(queue_name=queue) if queue else task).enqueue(*args)
    else:
        celery_app.tasks[name].apply_async(args, **({"queue": queue} if queue else {}))


def decided_without_its_continuation(api, ops, model, approver, monkeypatch):
    """A conversation whose only gated call was rejected, its continuation never queued (as if the queue lost it)."""
    call = gated_call(api, ops, model, "lost")
    monkeypatch.setattr("toolcalling.approval._runs.enqueue_continue", lambda conversation_id: None)
    approval.reject(call, approver, "not now")
    monkeypatch.undo()
    assert Conversation.objects.get(pk=ops["id"]).status == "awaiting_approval"
    assert ToolCall.objects.get(pk=call.pk).status == "rejected"
    return call


@pytest.mark.each_runner
def test_the_sweep_run_on_the_worker_continues_a_conversation_whose_continuation_was_lost(
    task_runner, api, ops, approver, worker_model, monkeypatch
):
    decided_without_its_continuation(api, ops, worker_model, approver, monkeypatch)
    # More than a minute ago: a continuation may no longer be on its way.
    Conversation.objects.filter(pk=ops["id"]).update(updated_at=timezone.now() - timedelta(minutes=2))
    worker_model.reply("Not bumped, as you decided.")
    queue_on(task_runner, "toolcalling.expire_waiting_tool_calls")
    assert final_answer(api, ops)[-1]["content"] == "Not bumped, as you decided."
    worker_model.assert_done()


QUEUE = "workers-without-a-model"
# No model settings in the worker: none in its TOOLCALLING (tests/settings.py) and none in its environment.
NO_MODEL = {"TOOLCALLING_TEST_NO_MODEL": "1", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}


@pytest.mark.each_runner
def test_a_worker_without_the_model_settings_warns_at_start_and_its_failed_continuation_names_them(
    task_runner, transactional_db, redis_server, api, ops, approver, model, monkeypatch, tmp_path
):
    decided_without_its_continuation(api, ops, model, approver, monkeypatch)
    log = tmp_path / "worker.log"
    db_name = str(connection.settings_dict["NAME"])
    if task_runner == "django":
        process = services.start_task_worker(log, "--queue-name", QUEUE, db_name=db_name, base_url="", env=NO_MODEL)
        wait = services.wait_for_task_worker
        started = "This task worker (db_worker) cannot reach the model"
    else:
        options = ("--pool=threads", "--concurrency=1", "-Q", QUEUE, "--hostname", "without-a-model@%h")
        process = services.start_worker(log, *options, db_name=db_name, base_url="", env={**WORKER_ENV, **NO_MODEL})
        wait = services.wait_for_worker
        started = "This Celery worker cannot reach the model"
    try:
        wait(process, log)
        services.wait_until(lambda: started in log.read_text(), what="the worker's warning")
        assert "OPENAI_API_KEY is not set in its environment" in log.read_text()
        with services.celery_conf(celery_app, task_always_eager=False):
            queue_on(task_runner, engine.CONTINUE_CONVERSATION, ops["id"], queue=QUEUE)

        def failed():
            conversation = Conversation.objects.get(pk=ops["id"])
            return conversation if conversation.status == "failed" else None

        conversation = services.wait_until(failed, what="the continuation to fail on the worker")
    finally:
        services.stop_worker(process, log)
    worker = "a task worker (db_worker)" if task_runner == "django" else "a Celery worker"
    assert f"This ran on {worker} whose settings cannot reach the model" in conversation.error
    assert "TOOLCALLING has no API_KEY and no BASE_URL here" in conversation.error
    assert "OPENAI_API_KEY is not set in its environment" in conversation.error
    model.assert_done()  # the web process's model was never asked to continue


@pytest.mark.each_runner
def test_background_messages_racing_for_one_conversation_run_one_turn_on_the_worker(alice, ops, worker_model):
    answered_all = threading.Event()

    def answer_after_the_race(body):
        # The turn holds the conversation until every racing message has its answer: one that came after the
        # turn ended would rightly start the next one.
        answered_all.wait(timeout=60)
        return "Answered once."

    worker_model.respond(answer_after_the_race)

    def send():
        client = APIClient()
        client.force_authenticate(alice)
        url = f"/api/toolcalling/conversations/{ops['id']}/messages/"
        return client.post(url, {"content": "anyone there?", "background": True}, format="json")

    try:
        responses = race(*[send] * 4)
    finally:
        answered_all.set()
    assert sorted(r.status_code for r in responses) == [202, 409, 409, 409], [r.content for r in responses]
    assert {r.json()["code"] for r in responses if r.status_code == 409} == {"conversation_busy"}

    def answered():
        conversation = Conversation.objects.get(pk=ops["id"])
        return conversation.status == "idle" and Message.objects.filter(conversation=conversation, role="assistant")

    [answer] = services.wait_until(answered, what="the worker to run the turn")
    assert answer.content == "Answered once."
    assert Message.objects.filter(conversation_id=ops["id"], role="user").count() == 1
    worker_model.assert_done()


DYING_QUEUE = "task-runs-that-die"


@pytest.mark.parametrize("task_runner", ["django"])  # Celery's: tests/approval/test_worker_dies.py
def test_a_task_worker_killed_mid_run_never_runs_the_call_again(
    task_runner, api, ops, approver, approver_api, worker_model, tmp_path, monkeypatch
):
    from django_tasks_db.models import DBTaskResult

    from toolcalling import django_tasks

    # Approved runs go to a queue only the doomed worker reads; the session's workers continue the conversation.
    monkeypatch.setattr(
        django_tasks, "run_approved_tool_call", django_tasks.run_approved_tool_call.using(queue_name=DYING_QUEUE)
    )
    db_name = str(connection.settings_dict["NAME"])
    log = tmp_path / "dying.log"
    doomed = services.start_task_worker(log, "--queue-name", DYING_QUEUE, db_name=db_name, base_url="", env={})
    try:
        services.wait_for_task_worker(doomed, log)
        release_file = tmp_path / "never"
        worker_model.call("slow_bump", {"name": "doomed", "release_file": str(release_file)})
        call_id = api.post(
            f"/api/toolcalling/conversations/{ops['id']}/messages/", {"content": "bump slowly"}, format="json"
        ).json()["awaiting_approval"][0]["id"]
        assert approver_api.post(f"/api/toolcalling/tool-calls/{call_id}/approve/").status_code == 200
        services.wait_until(
            lambda: Counter.objects.filter(name="doomed", value=1).exists(), what="the tool to start on the worker"
        )
        assert int((tmp_path / "never.pid").read_text()) == doomed.pid  # it runs on the worker we kill
        assert ToolCall.objects.get(pk=call_id).status == "running"
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait(timeout=10)
    # The task stays claimed by the dead worker: a new worker on the queue finds nothing to run, and exits.
    [task] = DBTaskResult.objects.filter(queue_name=DYING_QUEUE)
    assert task.status == "RUNNING"
    revived_log = tmp_path / "revived.log"
    revived = services.start_task_worker(
        revived_log, "--queue-name", DYING_QUEUE, "--batch", db_name=db_name, base_url="", env={}
    )
    assert revived.wait(timeout=60) == 0, revived_log.read_text()
    assert "No more tasks to run" in revived_log.read_text()
    assert ToolCall.objects.get(pk=call_id).status == "running"

    # The sweep finds it once the lease has ended: ``slow_bump`` may not run again, so it waits for a person, as on
    # Celery; once they say it took effect, the conversation goes on on the session's workers. It ran once.
    later = timezone.now() + timedelta(seconds=toolcalling_settings.APPROVAL_RUN_TIMEOUT + 1)
    approval.sweep(now=later)
    call = ToolCall.objects.get(pk=call_id)
    assert (call.status, call.error) == ("outcome_unknown", WORKER_STOPPED)
    assert call.worker.endswith(f":{doomed.pid}")  # the desk says which worker ran it
    worker_model.reply("The counter was bumped before the worker stopped.")
    approval.settle(call, approver, "succeeded", "The counter shows the bump.")
    assert final_answer(api, ops)[-1]["content"] == "The counter was bumped before the worker stopped."
    assert Counter.objects.get(name="doomed").value == 1  # ran once, never again
