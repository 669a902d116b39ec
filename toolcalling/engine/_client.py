"""The model client: one small layer over ``openai.OpenAI`` Chat Completions, configured from settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import openai
from django.utils.module_loading import import_string

from ..conf import OFFLINE_CLIENT_FACTORY, toolcalling_settings
from ..exceptions import ModelError


@dataclass(kw_only=True)
class RequestedCall:
    """One tool call in a model answer, as the model sent it."""

    id: str
    name: str
    arguments: str


@dataclass(kw_only=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(kw_only=True)
class ModelReply:
    """A model answer: text, tool calls, or both."""

    content: str | None
    tool_calls: list[RequestedCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None


DeltaCallback = Callable[[str], None]


class ModelClient:
    """Sends one Chat Completions request and returns a ``ModelReply``; errors become ``ModelError``."""

    def __init__(self, client: openai.OpenAI) -> None:
        self.client = client

    def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
        **options: Any,
    ) -> ModelReply:
        """Ask the model once. With ``on_delta``, stream and call it with each text delta."""
        kwargs: dict[str, Any] = {**toolcalling_settings.MODEL_OPTIONS, **options}
        if tools:
            kwargs["tools"] = tools
        try:
            if on_delta is not None:
                return self._stream(model, messages, kwargs, on_delta)
            response = self.client.chat.completions.create(model=model, messages=messages, **kwargs)
        except openai.APIStatusError as exc:
            raise ModelError(f"The model endpoint answered {exc.status_code}: {_api_message(exc)}") from exc
        except openai.APITimeoutError as exc:
            raise ModelError("The model endpoint did not answer in time.") from exc
        except openai.APIConnectionError as exc:
            raise ModelError(f"Could not reach the model endpoint: {exc}") from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"The model request failed: {exc}") from exc
        if not response.choices:
            raise ModelError("The model endpoint answered without a choice.")
        choice = response.choices[0]
        message = choice.message
        calls = [
            RequestedCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "")
            for c in (message.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        usage = response.usage
        return ModelReply(
            content=message.content,
            tool_calls=calls,
            usage=Usage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                total_tokens=usage.total_tokens if usage else 0,
            ),
            model=response.model or model,
            finish_reason=choice.finish_reason,
        )

    def _stream(
        self, model: str, messages: list[dict[str, Any]], kwargs: dict[str, Any], on_delta: DeltaCallback
    ) -> ModelReply:
        """Stream an answer, assembling text and tool-call deltas (arguments arrive in pieces)."""
        stream = self.client.chat.completions.create(
            model=model, messages=messages, stream=True, stream_options={"include_usage": True}, **kwargs
        )
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        reply = ModelReply(content=None, model=model)
        for chunk in stream:
            if chunk.usage:
                reply.usage = Usage(
                    prompt_tokens=chunk.usage.prompt_tokens,
                    completion_tokens=chunk.usage.completion_tokens,
                    total_tokens=chunk.usage.total_tokens,
                )
            reply.model = chunk.model or reply.model
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content:
                    text.append(delta.content)
                    on_delta(delta.content)
                for part in delta.tool_calls or []:
                    slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                    if part.id:
                        slot["id"] = part.id
                    if part.function is not None:
                        if part.function.name:
                            slot["name"] += part.function.name
                        if part.function.arguments:
                            slot["arguments"] += part.function.arguments
                if choice.finish_reason:
                    reply.finish_reason = choice.finish_reason
        reply.content = "".join(text) if text else None
        reply.tool_calls = [RequestedCall(**calls[i]) for i in sorted(calls)]
        return reply


def _api_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return exc.message


def get_client() -> ModelClient:
    """The site's model client, built from ``TOOLCALLING`` once (and again when the setting changes)."""
    return toolcalling_settings.derived("model_client", lambda: ModelClient(build_openai_client()))


def build_openai_client() -> openai.OpenAI:
    """The ``openai.OpenAI`` client settings describe: ``CLIENT_FACTORY`` (or the offline model's) builds it,
    else ``API_KEY``, ``BASE_URL``, ``TIMEOUT`` and ``MAX_RETRIES`` do."""
    s = toolcalling_settings
    factory = s.CLIENT_FACTORY or (OFFLINE_CLIENT_FACTORY if s.OFFLINE_MODEL else None)
    if factory:
        return import_string(factory)()
    return openai.OpenAI(
        api_key=s.API_KEY or "not-set", base_url=s.BASE_URL, timeout=s.TIMEOUT, max_retries=s.MAX_RETRIES
    )
