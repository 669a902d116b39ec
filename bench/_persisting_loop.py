"""The hand-written loop that also stores what it does: the fair baseline for a loop that persists.

It is the bare SDK loop of ``loop_overhead.py`` (the history built by hand and sent through the SDK) plus the
rows the app stores for the same turn, written the plain way with the ORM: the user's message, each answer with
its calls and the conversation's token totals, each call's result with its tool message, each in a transaction
of its own, as a developer writing a persisting loop by hand would. No claim, no fencing, no usage counters,
no hooks: only what a turn must store. Runs in the app's runner process (``_app_runner.py``), on its database.

``persisting_anthropic_loop`` is the same over Anthropic's Messages API through the ``anthropic`` SDK: each
answer's content blocks go back as they came and are stored with it (as the app stores them), results go back
as the next user message.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import httpx2
import openai
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from bench._model import ADD, ADD_ANTHROPIC, ANSWER, QUESTION
from toolcalling.models import Conversation, Message, ToolCall


@functools.cache
def sdk_client(base_url: str) -> openai.OpenAI:
    """One client per server, as the app keeps one: making one costs more CPU than a turn's storage."""
    return openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)


@dataclass
class Answer:
    """What the loop keeps of an answer: the message to send back, and what it stores."""

    message: dict[str, Any]
    content: str
    calls: list[tuple[str, str, str]]  # (id, name, arguments)
    model: str
    prompt: int
    completion: int


def created(client: openai.OpenAI, history: list[dict[str, Any]]) -> Answer:
    """An answer through ``chat.completions.create``, as the bare loop asks."""
    response = client.chat.completions.create(model="m", messages=history, tools=[ADD])
    message = response.choices[0].message
    usage = response.usage
    return Answer(
        message.model_dump(exclude_none=True),
        message.content or "",
        [(call.id, call.function.name, call.function.arguments) for call in message.tool_calls or []],
        response.model,
        *((usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)),
    )


def posted(client: openai.OpenAI, history: list[dict[str, Any]]) -> Answer:
    """An answer through the SDK's plain ``client.post("/chat/completions")`` and the JSON it answers, as the app
    asks: the SDK does not walk the history through its parameter transform."""
    body = {"model": "m", "messages": history, "tools": [ADD]}
    response = json.loads(client.post("/chat/completions", body=body, cast_to=httpx2.Response).content)
    message = response["choices"][0]["message"]
    usage = response.get("usage") or {}
    calls = message.get("tool_calls") or []
    return Answer(
        {key: value for key, value in message.items() if value is not None},
        message.get("content") or "",
        [(call["id"], call["function"]["name"], call["function"]["arguments"]) for call in calls],
        response["model"],
        usage.get("prompt_tokens", 0),
        usage.get("completion_tokens", 0),
    )


def begin(user: Any, conversation: Conversation | None) -> Conversation:
    """Store the user's message and set the conversation running, in one transaction; the first turn makes the
    conversation there, on the clock, as the app's first turn does (``Assistant.run`` without one)."""
    with transaction.atomic():
        if conversation is None:
            conversation = Conversation.objects.create(
                user=user, assistant_id="bench", status=Conversation.Status.RUNNING
            )
        else:
            Conversation.objects.filter(pk=conversation.pk).update(
                status=Conversation.Status.RUNNING, updated_at=timezone.now()
            )
        Message.objects.create(conversation=conversation, role=Message.Role.USER, content=QUESTION)
    return conversation


def add_tokens(conversation: Conversation, prompt: int, completion: int, *, ended: bool) -> None:
    """Add an answer's tokens to the conversation's totals (in the answer's transaction); ``ended``: it was the
    turn's last, the conversation is idle again."""
    Conversation.objects.filter(pk=conversation.pk).update(
        prompt_tokens=F("prompt_tokens") + prompt,
        completion_tokens=F("completion_tokens") + completion,
        total_tokens=F("total_tokens") + prompt + completion,
        updated_at=timezone.now(),
        **({"status": Conversation.Status.IDLE} if ended else {}),
    )


def run_call(conversation: Conversation, call: ToolCall) -> str:
    """Run a call of ``add`` and store its result with its tool message, in a transaction; the result."""
    arguments = json.loads(call.raw_arguments)
    result = str(arguments["a"] + arguments["b"])
    with transaction.atomic():
        ToolCall.objects.filter(pk=call.pk).update(
            status=ToolCall.Status.SUCCEEDED, arguments=arguments, result=result, finished_at=timezone.now()
        )
        Message.objects.create(
            conversation=conversation, role=Message.Role.TOOL, content=result, tool_call_id=call.call_id
        )
    return result


def persisting_loop(
    base_url: str,
    user: Any,
    turns: int,
    *,
    conversation: Conversation | None = None,
    post: bool = False,
    around: Callable[[], AbstractContextManager[Any]] = nullcontext,
) -> list[float]:
    """Seconds per turn of a new conversation of ``turns`` turns, made by its first turn (or of ``conversation``),
    every message and call stored; ``post``: each answer asked for through ``client.post``, as the app asks
    (``posted``); ``around``: what each turn runs in (``bench/floor_cost.py`` counts a turn's work there)."""
    client = sdk_client(base_url)
    ask = posted if post else created
    history: list[dict[str, Any]] = [{"role": "system", "content": "You add numbers."}]
    times = []
    for _ in range(turns):
        with around():
            started = time.perf_counter()
            conversation = begin(user, conversation)
            history.append({"role": "user", "content": QUESTION})
            while True:
                answer = ask(client, history)
                history.append(answer.message)
                prompt, completion = answer.prompt, answer.completion
                with transaction.atomic():
                    stored = Message.objects.create(
                        conversation=conversation,
                        role=Message.Role.ASSISTANT,
                        content=answer.content,
                        model=answer.model,
                        prompt_tokens=prompt,
                        completion_tokens=completion,
                        total_tokens=prompt + completion,
                    )
                    calls = [
                        ToolCall.objects.create(
                            conversation=conversation,
                            message=stored,
                            index=index,
                            call_id=call_id,
                            name=name,
                            raw_arguments=arguments,
                            status=ToolCall.Status.RUNNING,
                        )
                        for index, (call_id, name, arguments) in enumerate(answer.calls)
                    ]
                    add_tokens(conversation, prompt, completion, ended=not calls)
                if not calls:
                    break
                for call in calls:
                    result = run_call(conversation, call)
                    history.append({"role": "tool", "tool_call_id": call.call_id, "content": result})
            assert answer.content == ANSWER
            times.append(time.perf_counter() - started)
    return times


@functools.cache
def anthropic_client(base_url: str) -> Any:
    import anthropic

    return anthropic.Anthropic(base_url=base_url.removesuffix("/v1"), api_key="x", max_retries=0)


def persisting_anthropic_loop(base_url: str, user: Any, turns: int) -> list[float]:
    """``persisting_loop`` over the Messages API: seconds per turn of a new conversation, every message stored."""
    client = anthropic_client(base_url)
    conversation: Conversation | None = None
    history: list[dict[str, Any]] = []
    times = []
    for _ in range(turns):
        started = time.perf_counter()
        conversation = begin(user, conversation)
        history.append({"role": "user", "content": QUESTION})
        while True:
            response = client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, system="You add numbers.",
                                              messages=history, tools=[ADD_ANTHROPIC])  # fmt: skip
            blocks = [block.model_dump(exclude_none=True) for block in response.content]
            history.append({"role": "assistant", "content": blocks})
            text = "".join(block["text"] for block in blocks if block["type"] == "text")
            prompt, completion = response.usage.input_tokens, response.usage.output_tokens
            with transaction.atomic():
                stored = Message.objects.create(
                    conversation=conversation,
                    role=Message.Role.ASSISTANT,
                    content=text,
                    model=response.model,
                    prompt_tokens=prompt,
                    completion_tokens=completion,
                    total_tokens=prompt + completion,
                    provider_items=blocks,
                )
                calls = [
                    ToolCall.objects.create(
                        conversation=conversation,
                        message=stored,
                        index=index,
                        call_id=block["id"],
                        name=block["name"],
                        raw_arguments=json.dumps(block["input"]),
                        status=ToolCall.Status.RUNNING,
                    )
                    for index, block in enumerate(b for b in blocks if b["type"] == "tool_use")
                ]
                add_tokens(conversation, prompt, completion, ended=not calls)
            if not calls:
                break
            results = []
            for call in calls:
                result = run_call(conversation, call)
                results.append({"type": "tool_result", "tool_use_id": call.call_id, "content": result})
            history.append({"role": "user", "content": results})
        assert text == ANSWER
        times.append(time.perf_counter() - started)
    return times
