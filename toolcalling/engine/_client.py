"""The model client: one small layer over ``openai.OpenAI`` Chat Completions, configured from settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx2
import openai
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _

from ..conf import OFFLINE_CLIENT_FACTORY, toolcalling_settings
from ..exceptions import ModelError
from ._replies import DeltaCallback, ModelReply, StreamAssembler, parse_json, reply_from_completion

if TYPE_CHECKING:
    from openai._types import RequestOptions


class ModelClient:
    """Sends one Chat Completions request and returns a validated ``ModelReply``; errors become ``ModelError``.

    It uses the SDK's own client (authentication, retries, timeouts, error types) through its plain
    ``post``: the request body is the JSON the turn already holds, and the answer is validated JSON
    (``_replies``), not the SDK's unvalidated objects.
    """

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
        body: dict[str, Any] = {"model": model, "messages": messages, **toolcalling_settings.MODEL_OPTIONS, **options}
        if tools:
            body["tools"] = tools
        request = request_options(body)
        try:
            if on_delta is not None:
                return self._stream(body, request, on_delta)
            response = self.client.post("/chat/completions", body=body, options=request, cast_to=httpx2.Response)
            return reply_from_completion(parse_json(response.content), model)
        except openai.APIStatusError as exc:
            values = {"status": exc.status_code, "message": _api_message(exc)}
            raise ModelError(_("The model endpoint answered %(status)s: %(message)s") % values) from exc
        except (openai.APITimeoutError, httpx2.TimeoutException) as exc:
            raise ModelError(_("The model endpoint did not answer in time.")) from exc
        except (openai.APIConnectionError, httpx2.TransportError) as exc:
            raise ModelError(_("Could not reach the model endpoint: %(error)s") % {"error": exc}) from exc
        except openai.OpenAIError as exc:
            raise ModelError(_("The model request failed: %(error)s") % {"error": exc}) from exc

    def _stream(self, body: dict[str, Any], request: RequestOptions, on_delta: DeltaCallback) -> ModelReply:
        """Stream an answer; a server that answers with one JSON completion instead is read as such."""
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        response = self.client.post(
            "/chat/completions", body=body, options=request, cast_to=httpx2.Response, stream=True
        )
        try:
            if response.headers.get("content-type", "").startswith("application/json"):
                reply = reply_from_completion(parse_json(response.read()), body["model"])
                if reply.content:
                    on_delta(reply.content)
                return reply
            assembler = StreamAssembler(body["model"], on_delta)
            assembler.feed_lines(response.iter_lines())
            return assembler.finish()
        finally:
            response.close()


def request_options(body: dict[str, Any]) -> RequestOptions:
    """Take the SDK's per-request options (``extra_headers``, ``extra_query``, ``extra_body``, ``timeout``) out
    of ``body``, where ``MODEL_OPTIONS`` and ``model_options`` put them, as ``create()`` would accept them."""
    options: RequestOptions = {"security": {"bearer_auth": True}}
    if "extra_headers" in body:
        options["headers"] = body.pop("extra_headers")
    if "extra_query" in body:
        options["params"] = body.pop("extra_query")
    if "timeout" in body:
        options["timeout"] = body.pop("timeout")
    body.update(body.pop("extra_body", None) or {})
    return options


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
