"""Preserved thinking through the loop: on the Claude models that bind each thinking block to what came before it,
the app's own legitimate changes to that prefix (a memory budget dropping an old turn, tool search offering more
tools, instructions built for each request) end in no 400: the app asks the API to drop the blocks that no longer
fit (``drop_block`` with its beta header), the API keeps every other one, and what it dropped is logged."""

import json
import logging

import pytest

from toolcalling import Assistant
from toolcalling.model_apis import AssistantMessage, ModelRequest, SystemMessage, UserMessage, get_model_api

from .assistants import DatedInstructionsAssistant

BOUND_MODEL = "claude-sonnet-5-5"
BOUND = pytest.mark.toolcalling(API="anthropic", MODEL=BOUND_MODEL, MODEL_OPTIONS={"thinking": {"type": "adaptive"}})
DROP = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
BETA = "interleaved-thinking-2025-05-14"
ENABLED = {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048}
GOOD = json.dumps({"answer": "yes", "confidence": 0.9})
DROPPED = (
    "The model API dropped thinking blocks of the request, which the conversation before them no longer matched: {}"
)


def two_turns(model, user, assistant_id):
    """Turn 1 uses a tool, turn 2 answers plainly, each answer with its thinking block; returns the conversation."""
    model.call("add", {"a": 1, "b": 2})
    model.reply("a1: it is 3")
    model.reply("a2: hello")
    assistant = Assistant.get(assistant_id)
    first = assistant.run(user, "q1 " + "x" * 400)
    assistant.run(user, "q2", first.conversation)
    return first.conversation


def dropped(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "toolcalling" and "dropped" in r.getMessage()]


@BOUND
def test_a_memory_budget_dropping_an_old_turn_drops_only_the_thinking_bound_to_it(strict_model, alice, caplog):
    conversation = two_turns(strict_model, alice, "lf_budget")  # history_max_messages = 6
    strict_model.reply("a3")
    with caplog.at_level(logging.INFO, logger="toolcalling"):
        result = Assistant.get("lf_budget").run(alice, "q3", conversation)

    assert result.reply == "a3"
    request = strict_model.requests[-1]
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]  # turn 1 left out
    assert request["thinking"] == DROP
    assert request["messages"][1]["content"][0]["type"] == "thinking"  # sent back; the API judges it
    assert dropped(caplog) == [DROPPED.format("messages.1.content.0 (prefix_binding_mismatch)")]


@BOUND
def test_tool_search_offering_what_it_found_keeps_the_turn_going(strict_model, alice, caplog):
    strict_model.call("search_tools", {"query": "cancel an order"})
    strict_model.call("cancel_order", {"order_id": "A-1"})
    strict_model.reply("Cancelled.")
    with caplog.at_level(logging.INFO, logger="toolcalling"):
        result = Assistant.get("lf_search").run(alice, "Cancel order A-1")

    assert result.reply == "Cancelled."
    first, second, third = strict_model.requests
    assert len(second["tools"]) > len(first["tools"])  # the tools changed within the turn
    assert all(request["thinking"] == DROP for request in (first, second, third))
    # The first answer's block was bound to one tool: dropped from the second request and the third. The second
    # answer's block (messages.3) was bound to the tools it was asked with, which the third request offers too: kept.
    assert dropped(caplog) == [DROPPED.format("messages.1.content.0 (prefix_binding_mismatch)")] * 2


@BOUND
def test_instructions_that_change_between_turns_drop_the_earlier_thinking(strict_model, alice, caplog, monkeypatch):
    conversation = two_turns(strict_model, alice, "lf_dated_instructions")
    monkeypatch.setattr(DatedInstructionsAssistant, "today", "Tuesday")
    strict_model.reply("a3")
    with caplog.at_level(logging.INFO, logger="toolcalling"):
        result = Assistant.get("lf_dated_instructions").run(alice, "q3", conversation)

    assert result.reply == "a3"
    assert strict_model.requests[-1]["system"][0]["text"] == "You help with sums. Today is Tuesday."
    every = ", ".join(f"messages.{n}.content.0 (prefix_binding_mismatch)" for n in (1, 3, 5))
    assert dropped(caplog) == [DROPPED.format(every)]  # the system prompt comes before them all


@BOUND
def test_final_memory_keeps_the_turn_going_when_it_leaves_out_the_calls_of_past_turns(strict_model, alice):
    conversation = two_turns(strict_model, alice, "lf_final")
    strict_model.call("add", {"a": 5, "b": 5})
    strict_model.reply("a3: 10")
    assert Assistant.get("lf_final").run(alice, "q3", conversation).reply == "a3: 10"


@BOUND
def test_an_unchanged_history_keeps_every_thinking_block(strict_model, alice, caplog):
    """Full memory, fixed instructions and tools: the cache point moves to the newest block each request, and
    nothing is dropped."""
    conversation = two_turns(strict_model, alice, "helper")
    strict_model.call("add", {"a": 5, "b": 5})
    strict_model.reply("a3: 10")
    with caplog.at_level(logging.INFO, logger="toolcalling"):
        result = Assistant.get("helper").run(alice, "q3", conversation)

    assert result.reply == "a3: 10"
    sent = [b for m in strict_model.requests[-1]["messages"] for b in m["content"] if b["type"] == "thinking"]
    assert len(sent) == 4  # every answer's block goes back
    assert dropped(caplog) == []


@pytest.mark.toolcalling(API="anthropic", MODEL="claude-sonnet-4-5", MODEL_OPTIONS=ENABLED)
def test_a_model_without_preserved_thinking_is_sent_no_binding(strict_model, alice):
    two_turns(strict_model, alice, "helper")
    assert all("block_binding" not in request["thinking"] for request in strict_model.requests)


@pytest.mark.toolcalling(API="anthropic", MODEL=BOUND_MODEL, MODEL_OPTIONS={"extra_headers": {"Anthropic-Beta": BETA}})
def test_a_request_without_thinking_gets_adaptive_thinking_with_the_binding_and_keeps_the_sites_beta(model):
    """A request that sets no ``thinking`` gets adaptive thinking with the binding: these models think adaptively
    by default, so adding it changes nothing else (platform.claude.com, "Fix a thinking block bound to a different
    conversation"); a beta the site sends goes with the binding's."""
    model.reply("hi")
    request = ModelRequest(model=BOUND_MODEL, messages=[UserMessage("hi")], tools=[])
    body, options = get_model_api().request_body(request)
    assert body["thinking"] == DROP
    assert options["headers"] == {"Anthropic-Beta": f"{BETA},thinking-binding-controls-2026-08-01"}
    assert get_model_api().send(request).content == "hi"
    # Thinking turned off, or a behaviour the site chose, is left as it is.
    off = ModelRequest(
        model=BOUND_MODEL, messages=[UserMessage("hi")], tools=[], options={"thinking": {"type": "disabled"}}
    )
    assert get_model_api().request_body(off)[0]["thinking"] == {"type": "disabled"}
    chosen = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "error"}}
    strict = ModelRequest(model=BOUND_MODEL, messages=[UserMessage("hi")], tools=[], options={"thinking": chosen})
    assert get_model_api().request_body(strict)[0]["thinking"] == chosen


@BOUND
def test_a_structured_output_correction_kept_out_of_the_history_keeps_the_next_turn_going(strict_model, alice, caplog):
    strict_model.reply('{"answer": "yes"}')  # no confidence: corrected, and the correction is not stored
    strict_model.reply(GOOD)
    first = Assistant.get("lf_structured").run(alice, "Is it?")
    strict_model.reply(GOOD)
    with caplog.at_level(logging.INFO, logger="toolcalling"):
        second = Assistant.get("lf_structured").run(alice, "And now?", first.conversation)

    assert second.output == first.output
    assert len(strict_model.requests[-1]["messages"]) == 3  # the question, the valid answer, the new question
    # The valid answer's block was bound to the invalid answer and the correction before it.
    assert dropped(caplog) == [DROPPED.format("messages.1.content.0 (prefix_binding_mismatch)")]


@BOUND
def test_a_streamed_answer_logs_the_blocks_dropped_too(strict_model, caplog):
    strict_model.reply("a1")
    strict_model.reply("a2")
    api = get_model_api()
    first = api.send(ModelRequest(model=BOUND_MODEL, messages=[SystemMessage("Monday."), UserMessage("q1")], tools=[]))
    later = [AssistantMessage(first.content or "", provider_items=first.provider_items), UserMessage("q2")]
    request = ModelRequest(model=BOUND_MODEL, messages=[SystemMessage("Tuesday."), UserMessage("q1"), *later], tools=[])
    deltas: list[str] = []
    with caplog.at_level(logging.INFO, logger="toolcalling"):
        assert api.send(request, on_delta=deltas.append).content == "a2"
    assert "".join(deltas) == "a2"
    assert dropped(caplog) == [DROPPED.format("messages.1.content.0 (prefix_binding_mismatch)")]
