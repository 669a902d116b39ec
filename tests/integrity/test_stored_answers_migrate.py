"""Conversations stored before answers kept their provider items migrate: the reasoning items stay with their answer
(as provider items, which later requests leave out without the ids that went with them), and each tool message
of a failed call is marked failed from its call's status, not from its text. Run on every database of the suite."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("toolcalling", "0011_attachments")]
AFTER = [("toolcalling", "0012_provider_items_and_failed_results")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_answers_keep_their_reasoning_and_failed_results_are_marked_from_the_calls_status(django_user_model):
    old = migrate(BEFORE)
    try:
        user = old.get_model("auth", "User").objects.create(username="migrated")
        Conversation = old.get_model("toolcalling", "Conversation")
        Message = old.get_model("toolcalling", "Message")
        ToolCall = old.get_model("toolcalling", "ToolCall")
        conversation = Conversation.objects.create(user_id=user.pk, assistant_id="helper")
        reasoning = [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA1"}]
        answer = Message.objects.create(conversation=conversation, role="assistant", content="", reasoning=reasoning)
        for index, (call_id, status, text) in enumerate([
            ("call_1", "failed", "Error: RuntimeError: boom"),
            ("call_2", "succeeded", "Error: none, all fine"),  # a result that only reads like a failure
            ("call_3", "cancelled", "Not run: stopped"),
        ]):  # fmt: skip
            ToolCall.objects.create(conversation=conversation, message=answer, index=index, call_id=call_id,
                                    name="add", arguments={}, status=status, result=text)  # fmt: skip
            Message.objects.create(conversation=conversation, role="tool", content=text, tool_call_id=call_id)
    finally:
        new = migrate(AFTER)
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    Message = new.get_model("toolcalling", "Message")
    assert Message.objects.get(role="assistant").provider_items == reasoning
    marked = dict(Message.objects.filter(role="tool").values_list("tool_call_id", "is_error"))
    assert marked == {"call_1": True, "call_2": False, "call_3": False}
