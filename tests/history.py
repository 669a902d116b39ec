"""What the strict server would refuse in a stored conversation's history, on the model API its assistant speaks.

The history is rendered by the model API's own code (what the next request would carry) and checked by that API's
rules. What the server issued (reasoning items, thinking blocks) is taken from the stored answers themselves: the
server already checked them when they came back; what is checked here is that every call is answered, in order.
"""

from typing import Any

from toolcalling.model_apis import AssistantMessage, HistoryMessage, SystemMessage
from toolcalling.model_apis.openai._chat_completions import to_chat
from toolcalling.models import Conversation
from toolcalling.storage import as_history, load_messages
from toolcalling.testing import validate_chat_request, validate_messages_request, validate_responses_request
from toolcalling.testing.rules_anthropic import IssuedThinking
from toolcalling.testing.rules_responses import Issued
from toolcalling.toolkit import assistants


def history_problems(conversation_id: Any) -> list[str]:
    """The errors the conversation's model API would report for its stored history (empty: it is accepted)."""
    conversation = Conversation.objects.get(pk=conversation_id)
    assistant = assistants.get(conversation.assistant_id)()
    messages = [SystemMessage("x"), *as_history(load_messages(conversation))]
    api = assistant.get_api()
    if api == "responses":
        return _responses_problems(assistant.get_model(), messages)
    if api == "anthropic":
        return _anthropic_problems(assistant, messages)
    return validate_chat_request({"model": "m", "messages": to_chat(messages)})


def _responses_problems(model: str, messages: list[HistoryMessage]) -> list[str]:
    from toolcalling.model_apis.openai._responses import to_input

    instructions, items = to_input(messages)
    issued = Issued()
    for message in messages:  # what the server issued is what the answers stored
        if isinstance(message, AssistantMessage):
            issued.record(message.provider_items)
    body = {"model": model, "instructions": instructions, "input": items, "store": False,
            "include": ["reasoning.encrypted_content"]}  # fmt: skip
    return validate_responses_request(body, issued)


def _anthropic_problems(assistant: Any, messages: list[HistoryMessage]) -> list[str]:
    from toolcalling.model_apis.anthropic._api import to_messages

    system, turns = to_messages(messages)
    issued = IssuedThinking()
    for turn in turns:
        blocks = turn["content"] if turn["role"] == "assistant" and isinstance(turn["content"], list) else []
        calls = [str(block["id"]) for block in blocks if block.get("type") == "tool_use"]
        for block in blocks:
            if block.get("type") == "thinking":
                issued.add(str(block.get("signature")), str(block.get("thinking")), calls)
    body: dict[str, Any] = {"model": assistant.get_model(), "max_tokens": 4096, "system": system, "messages": turns}
    thinking = {**_settings_options(), **(assistant.model_options or {})}.get("thinking")
    if thinking is not None:
        body["thinking"] = thinking
    return validate_messages_request(body, issued)


def _settings_options() -> dict[str, Any]:
    from toolcalling.conf import toolcalling_settings

    return dict(toolcalling_settings.MODEL_OPTIONS)
