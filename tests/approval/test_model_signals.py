"""A site's ``post_save`` receivers hear of every step of an approved call: waiting, approved, running, its result."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.model_signals import Seen, created, listening
from toolcalling.models import Message, ToolCall


@pytest.fixture
def seen() -> Iterator[list[Seen]]:
    with listening() as heard:
        yield heard


@pytest.mark.django_db(transaction=True)  # commits happen, so the approval's run starts after its commit, as live
def test_an_approved_call_is_heard_of_at_each_change_and_every_message_too(api, ops, approver_api, model, seen):
    model.call("bump", {"name": "orders", "by": 2})
    model.reply("Done: the counter is at 2.")
    url = f"/api/toolcalling/conversations/{ops['id']}/messages/"
    response = api.post(url, {"content": "bump the orders counter by 2"}, format="json")
    assert response.status_code == 201, response.content
    [call] = ToolCall.objects.filter(conversation_id=ops["id"])
    assert call.status == "awaiting_approval"
    waiting = len(seen)

    response = approver_api.post(f"/api/toolcalling/tool-calls/{call.pk}/approve/", {}, format="json")
    assert response.status_code == 200, response.content  # the run and the continuation ran (tasks run eagerly)

    call.refresh_from_db()
    messages = list(Message.objects.filter(conversation_id=ops["id"]).order_by("id"))
    assert call.status == "succeeded"
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert created(seen, "Message") == [m.pk for m in messages]
    changes = [(s.created, s.status) for s in seen if s.model == "ToolCall"]
    assert changes == [
        (True, "running"),  # stored with the answer that asked for it
        (False, "awaiting_approval"),
        (False, "approved"),
        (False, "running"),  # a worker's run under its lease
        (False, "succeeded"),
    ]
    assert [(s.created, s.status) for s in seen[:waiting] if s.model == "ToolCall"] == changes[:2]
    for change in seen:
        if change.model == "ToolCall" and not change.created:
            assert change.update_fields is not None and "status" in change.update_fields
            assert change.pk == call.pk and change.using == "default"
    decided = next(s for s in seen if s.status == "approved")
    assert {"decided_by", "decided_at"} <= (decided.update_fields or set())
