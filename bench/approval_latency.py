"""From an approval to its tool starting on a worker, against a bare Celery round trip, in one run.

Run: ``.venv/bin/python bench/approval_latency.py [--rounds 15] [--database postgresql]``.

A private redis-server is the broker and one real Celery worker of the test site runs the tasks; with
``--database postgresql`` a private PostgreSQL cluster (commits wait for the disk) holds the site's data. The bare
round trip is ``task.delay()`` to the task's first line. The approval is ``toolcalling.approval.approve()``
(the decision's transaction, its log entry and signal, queueing the run) to the first line of the approved
tool on the worker (claiming the call, rebuilding its context, checking the requester's rights again).
Both write the time they started to a file; the ratio of the medians is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
VAR = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-")))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")


def started(key: str, since: float) -> float:
    """Seconds from ``since`` until the stamp ``key`` was written."""
    from tests.approvalapp.tools import stamp_path
    from tests.services import wait_until

    path = Path(stamp_path(key))
    wait_until(lambda: path.exists() and path.read_text(), timeout=60, what=f"the stamp {key}")
    return float(path.read_text()) - since


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="sqlite")
    options = parser.parse_args()
    with ExitStack() as stack:
        from bench._postgres import postgres
        from tests import services

        if options.database == "postgresql":
            stack.enter_context(postgres(VAR))  # before Django reads the settings
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Permission
        from django.core.management import call_command
        from django.db import connection

        from bench._model import model_server
        from tests.approvalapp.tasks import stamp
        from tests.celery_app import app as celery_app
        from toolcalling import Assistant, approval
        from toolcalling.engine import Turn
        from toolcalling.model_apis import ModelReply, RequestedCall
        from toolcalling.models import Conversation

        call_command("migrate", verbosity=0)
        user, _ = get_user_model().objects.get_or_create(username="bench")
        staff, _ = get_user_model().objects.get_or_create(username="bench-staff", is_staff=True)
        staff.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
        staff = get_user_model().objects.get(pk=staff.pk)
        broker = stack.enter_context(services.redis_server(VAR, services.free_port()))
        base_url = stack.enter_context(model_server())
        celery_app.conf.update(task_always_eager=False, broker_url=broker, result_backend=broker)
        log = VAR / "worker.log"
        database = str(connection.settings_dict["NAME"])
        env = {"CELERY_BROKER_URL": broker, "CELERY_RESULT_BACKEND": broker}
        stack.enter_context(
            services.running_worker(log, "--pool=threads", db_name=database, base_url=base_url, env=env)
        )

        def waiting_call() -> tuple[Any, str]:
            """A call of ``stamp`` waiting for approval, stored as a turn stores it."""
            conversation = Conversation.objects.create(user=user, assistant_id="stamper")
            turn = Turn(Assistant.get("stamper"), conversation, user=user)
            turn.claim(content="stamp it")
            key = uuid.uuid4().hex
            asked = RequestedCall(id="", name="stamp", arguments=json.dumps({"key": key}))
            _, [call] = turn.ledger.add_reply(ModelReply(content="", tool_calls=[asked]))
            call.arguments = {"key": key}
            turn.ledger.wait_for_approval(call)
            turn.ledger.set_status("awaiting_approval")
            return call, key

        bare, approved, deciding = [], [], []
        for _ in range(options.rounds + 2):  # the first two warm up the worker
            key = uuid.uuid4().hex
            since = time.time()
            stamp.delay(key)
            bare.append(started(key, since))
            call, key = waiting_call()
            since = time.time()
            approval.approve(call, staff)
            deciding.append(time.time() - since)
            approved.append(started(key, since))
        bare, approved = bare[2:], approved[2:]
        ratio = statistics.median(approved) / statistics.median(bare)
        print(f"{options.database}, median of {options.rounds} rounds")
        print(f"bare Celery round trip:   {statistics.median(bare) * 1000:6.1f} ms")
        print(f"approve -> tool starts:   {statistics.median(approved) * 1000:6.1f} ms"
              f" (approve() itself: {statistics.median(deciding[2:]) * 1000:.1f} ms)")  # fmt: skip
        print(f"ratio approval / bare:    {ratio:6.2f}")


if __name__ == "__main__":
    main()
