"""The Responses history sent back as the API pairs it: each reasoning item right before the item issued after it,
with that item's id, and an item's id only beside its reasoning (the rules in toolcalling.testing.rules_responses,
each with the public report it was taken from). What the server issued is the answer's stored items."""

from typing import Any

from toolcalling.model_apis import (
    AssistantMessage,
    HistoryMessage,
    RequestedCall,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from toolcalling.model_apis.openai._responses import to_input
from toolcalling.testing import validate_responses_request
from toolcalling.testing.rules_responses import Issued

RS = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA1"}
FC = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add", "arguments": '{"a":1,"b":2}',
      "status": "completed"}  # fmt: skip
FC2 = {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "whoami", "arguments": "{}",
       "status": "completed"}  # fmt: skip
MSG = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
       "content": [{"type": "output_text", "text": "Let me add.", "annotations": [], "logprobs": []}]}  # fmt: skip


def call(call_id: str, name: str, arguments: str) -> RequestedCall:
    return RequestedCall(id=call_id, name=name, arguments=arguments)


def answer(items: list[dict[str, Any]], content: str | None, *calls: RequestedCall) -> AssistantMessage:
    return AssistantMessage(content or "", list(calls), items)


def result(call_id: str, text: str = "3") -> ToolMessage:
    return ToolMessage(call_id, text)


def problems(messages: list[HistoryMessage], issued_output: list[dict[str, Any]]) -> list[str]:
    """What the strict server refuses in the request ``messages`` make, having issued ``issued_output``."""
    issued = Issued()
    issued.record(issued_output)
    instructions, items = to_input([SystemMessage("x"), *messages])
    body = {"model": "gpt-5-mini", "instructions": instructions, "input": items, "store": False,
            "include": ["reasoning.encrypted_content"]}  # fmt: skip
    return validate_responses_request(body, issued)


ASK = UserMessage("1 + 2, and who am I?")


def test_an_answer_goes_back_with_the_ids_it_was_issued_with():
    # Without the function calls' ids the API refuses the reasoning item ("without its required following item").
    issued = [RS, MSG, FC, FC2]
    messages = [ASK, answer(issued, "Let me add.", call("call_1", "add", '{"a":1,"b":2}'), call("call_2", "whoami",
                                                                                                "{}")),
                result("call_1"), result("call_2", "alice")]  # fmt: skip
    assert problems(messages, issued) == []
    _, items = to_input(messages)
    assert items[1:5] == issued


def test_a_call_gone_from_the_history_takes_the_reasoning_and_the_ids_that_needed_it():
    # A memory policy or a stored answer without its call: sending the reasoning item without the call issued
    # after it, or the other items' ids without the reasoning, is refused; the rest goes without both.
    issued = [RS, FC, FC2]
    messages = [ASK, answer(issued, None, call("call_2", "whoami", "{}")), result("call_2", "alice")]
    assert problems(messages, issued) == []
    _, items = to_input(messages)
    assert items[1] == {key: value for key, value in FC2.items() if key != "id"}
    assert not [item for item in items if item.get("type") == "reasoning"]


def test_an_answer_stored_before_its_items_were_goes_back_without_reasoning_or_ids():
    # Answers stored before provider items were kept hold their reasoning items alone.
    issued = [RS, FC]
    messages = [ASK, answer([RS], None, call("call_1", "add", '{"a":1,"b":2}')), result("call_1")]
    assert problems(messages, issued) == []
    _, items = to_input(messages)
    assert [item["type"] for item in items] == ["message", "function_call", "function_call_output"]
    assert "id" not in items[1]


def test_a_reasoning_item_without_its_encrypted_content_stays_out_with_the_ids_after_it():
    bare = {**RS, "encrypted_content": None}
    messages = [ASK, answer([bare, FC], None, call("call_1", "add", '{"a":1,"b":2}')), result("call_1")]
    assert problems(messages, [bare, FC]) == []
    _, items = to_input(messages)
    assert [item["type"] for item in items] == ["message", "function_call", "function_call_output"]
    assert "id" not in items[1]


def test_a_call_goes_back_with_the_arguments_the_history_holds_under_its_issued_id():
    # An approver may have edited the arguments: the model reads what ran.
    issued = [RS, FC]
    messages = [ASK, answer(issued, None, call("call_1", "add", '{"a":5,"b":2}')), result("call_1", "7")]
    assert problems(messages, issued) == []
    _, items = to_input(messages)
    assert items[2] == {**FC, "arguments": '{"a":5,"b":2}'}


def test_another_apis_answer_goes_back_as_new_items():
    thinking = [{"type": "thinking", "thinking": "Hm.", "signature": "Eq1"}, {"type": "text", "text": "Hi."}]
    messages = [ASK, answer(thinking, "Hi."), ASK]
    assert problems(messages, []) == []
    _, items = to_input(messages)
    assert items[1] == {"type": "message", "role": "assistant", "content": "Hi."}
