"""One request through an SDK's own client (``openai``'s or ``anthropic``'s), sync or async: the JSON body posted
with the SDK's ``post`` (its authentication, retries and time-outs), the answer read whole, or streamed through the
API's assembler, the SDK's errors raised as ``ModelError``. Each API says the rest: its SDK, its path, its body,
how it reads an answer and a stream.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any, ClassVar

import httpx2
from django.utils.translation import gettext as _

from .._worker import hint as worker_hint
from ..exceptions import ModelError
from . import _reading as read
from ._base import DeltaCallback, ModelAPI, ModelReply, ModelRequest


class PostedModelAPI(ModelAPI):
    """A model API whose requests are one ``post`` of an SDK client."""

    path: ClassVar[str]
    sdk: ClassVar[ModuleType]
    """The SDK module (``openai``, ``anthropic``): both name their errors alike (``APIStatusError``,
    ``APITimeoutError``, ``APIConnectionError``)."""
    sdk_error: ClassVar[type[Exception]]
    """The base of all the SDK's errors (``openai.OpenAIError``, ``anthropic.AnthropicError``)."""
    default_request_options: ClassVar[dict[str, Any]] = {}
    """The SDK's request options every request starts from."""

    @abc.abstractmethod
    def request_body(self, request: ModelRequest) -> tuple[dict[str, Any], Any]:
        """The request's JSON body and the SDK's options taken out of it (``request_options``)."""

    @abc.abstractmethod
    def reply(self, data: Any, model: str) -> ModelReply:
        """The reply of an answer's JSON (``model``: the one asked for)."""

    @abc.abstractmethod
    def assembler(self, model: str, on_delta: DeltaCallback) -> read.Assembler:
        """What reads a streamed answer."""

    def payload(self, body: dict[str, Any]) -> dict[str, Any]:
        """What the SDK's ``post`` takes to send ``body`` (this default: the body itself, which the SDK encodes)."""
        return {"body": body}

    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body that asks for a stream."""
        return {**body, "stream": True}

    def request_options(self, body: dict[str, Any]) -> dict[str, Any]:
        """Take the SDK's per-request options (``extra_headers``, ``extra_query``, ``extra_body``, ``timeout``) out
        of ``body``, where ``MODEL_OPTIONS`` and ``model_options`` put them, as ``create()`` would accept them."""
        options = dict(self.default_request_options)
        if "extra_headers" in body:
            options["headers"] = body.pop("extra_headers")
        if "extra_query" in body:
            options["params"] = body.pop("extra_query")
        if "timeout" in body:
            options["timeout"] = body.pop("timeout")
        body.update(body.pop("extra_body", None) or {})
        return options

    @contextmanager
    def errors(self) -> Iterator[None]:
        """The SDK's errors around one request, as ``ModelError``; in a worker that lacks the model's settings,
        with a sentence that names them (the web process may have them, so the error alone would mislead)."""
        try:
            with self.sdk_errors():
                yield
        except ModelError as exc:
            hint = worker_hint()
            if not hint:
                raise
            raise ModelError(f"{exc.detail}{hint}") from exc

    @contextmanager
    def sdk_errors(self) -> Iterator[None]:
        """The SDK's errors around one request, as ``ModelError``."""
        sdk = self.sdk
        try:
            yield
        except sdk.APIStatusError as exc:
            raise self.status_error(exc) from exc
        except (sdk.APITimeoutError, httpx2.TimeoutException) as exc:
            raise ModelError(_("The model endpoint did not answer in time.")) from exc
        except (sdk.APIConnectionError, httpx2.TransportError) as exc:
            raise ModelError(_("Could not reach the model endpoint: %(error)s") % {"error": exc}) from exc
        except self.sdk_error as exc:
            raise ModelError(_("The model request failed: %(error)s") % {"error": exc}) from exc

    def status_error(self, exc: Any) -> ModelError:
        """The endpoint's error status (the SDK's ``APIStatusError``) as a ``ModelError``."""
        message = read.error_message(exc.body) or exc.message
        text = _("The model endpoint answered %(status)s: %(message)s")
        return ModelError(text % {"status": exc.status_code, "message": message} + self.status_hint(message))

    def status_hint(self, message: str) -> str:
        """What to add to an error status's ``message`` to say how to avoid it (this default: nothing)."""
        return ""

    def send(self, request: ModelRequest, *, on_delta: DeltaCallback | None = None) -> ModelReply:
        body, options = self.request_body(request)
        with self.errors():
            if on_delta is None:
                response = self.client.post(self.path, **self.payload(body), options=options, cast_to=httpx2.Response)
                return self.reply(read.parse_json(response.content), request.model)
            # A server that answers with one JSON body instead of a stream is read as such.
            response = self.client.post(self.path, **self.payload(self.stream_body(body)), options=options,
                                        cast_to=httpx2.Response, stream=True)  # fmt: skip
            model = body["model"]
            return read.streamed_reply(response, model, on_delta, self.reply, self.assembler(model, on_delta))

    async def asend(self, request: ModelRequest, *, on_delta: DeltaCallback | None = None) -> ModelReply:
        """``send`` through the SDK's async client, streamed or not: the wait for the model holds no thread. A
        client a factory or the offline model built (its async twin unknown) waits in a thread
        (``ModelAPI.asend``)."""
        client = self.async_client
        if client is None:
            return await super().asend(request, on_delta=on_delta)
        body, options = self.request_body(request)
        with self.errors():
            if on_delta is None:
                response = await client.post(self.path, **self.payload(body), options=options, cast_to=httpx2.Response)
                return self.reply(read.parse_json(response.content), request.model)
            response = await client.post(self.path, **self.payload(self.stream_body(body)), options=options,
                                         cast_to=httpx2.Response, stream=True)  # fmt: skip
            model = body["model"]
            return await read.astreamed_reply(response, model, on_delta, self.reply, self.assembler(model, on_delta))
