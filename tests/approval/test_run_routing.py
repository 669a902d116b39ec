"""Where a worker moves an approved call to ``running``: on the router's write database, and a site's receiver of
``post_save`` hears of it from there, as of every other change of a call (tests/integrity/test_routers.py)."""

import pytest
from django.test import override_settings

from tests.approval.test_decision_records import waiting_calls
from tests.integrity.test_routers import WRITES, AppWritesElsewhere
from tests.model_signals import listening
from toolcalling.approval._runs import start_run
from toolcalling.models import ToolCall


@pytest.mark.django_db(transaction=True, databases=["default", WRITES])
def test_a_worker_starts_an_approved_call_on_the_routers_write_database(api, ops, model):
    [call] = waiting_calls(api, ops, model, "a")
    ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.APPROVED)  # as approve() leaves it
    with override_settings(DATABASE_ROUTERS=[AppWritesElsewhere()]), listening() as seen:
        running = start_run(call.pk)
    assert running is not None and running.status == "running" and running.conversation.user.username == "alice"
    assert [(s.model, s.status, s.using) for s in seen] == [("ToolCall", "running", WRITES)]
    assert ToolCall.objects.get(pk=call.pk).status == "running"
    assert start_run(call.pk) is None  # a second delivery of the task finds it started under a live lease
