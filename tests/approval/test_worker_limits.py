"""A usage limit holds across processes: turns on a real worker (Celery's or a db_worker) and in the web process
count into the same rows and are checked against them (the budget assistant allows 1000 tokens a day per user)."""

import pytest

from tests.limits.conftest import history_problems
from tests.services import wait_until
from toolcalling.models import Conversation, ToolCall, UsageCounter
from toolcalling.usage import window

URL = "/api/toolcalling/conversations/{}/messages/"


@pytest.mark.each_runner
def test_turns_on_the_worker_and_in_the_web_process_share_one_limit(api, alice, worker_model):
    conversation = Conversation.objects.create(user=alice, assistant_id="budget")
    worker_model.reply("Answered in the web process.", usage=(500, 100))
    assert api.post(URL.format(conversation.pk), {"content": "here"}, format="json").status_code == 201

    # 600 of 1000 used: the background turn starts; on the worker its answer brings the total to 1200, its call
    # still runs, and its next model call is refused, which only the web process's 600 tokens can explain.
    worker_model.call("add", {"a": 2, "b": 2}, usage=(500, 100))
    accepted = api.post(URL.format(conversation.pk), {"content": "there", "background": True}, format="json")
    assert accepted.status_code == 202, accepted.content

    def failed():
        conversation.refresh_from_db()
        return conversation.status == "failed"

    wait_until(failed, what="the worker's turn to reach the limit")
    assert conversation.error.startswith("You have reached your limit of 1,000 tokens per day.")
    assert ToolCall.objects.get(conversation=conversation).status == "succeeded"
    assert history_problems(conversation.pk) == []

    refused = api.post(URL.format(conversation.pk), {"content": "and now?"}, format="json")
    assert refused.status_code == 429, refused.content
    assert refused.json()["limit"]["used"] == 1200 and int(refused["Retry-After"]) > 0
    row = UsageCounter.objects.get(scope="user", key=str(alice.pk), period="day", period_start=window("day")[0])
    assert (row.tokens, row.turns, row.tool_calls) == (1200, 2, 1)
    worker_model.assert_done()
