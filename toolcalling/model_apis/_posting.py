"""One request through an SDK's own client (``openai``'s or ``anthropic``'s), sync or async: the JSON body posted
with the SDK's ``post`` (its authentication, retries and time-outs), the answer read whole, or streamed through the
API's assembler. Each API says the rest: its path, its body, how it reads an answer and a stream, its SDK's errors.
"""

from __future__ import annotations

import abc
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import httpx2

from . import _reading as read
from ._base import DeltaCallback, ModelAPI, ModelReply, ModelRequest


class PostedModelAPI(ModelAPI):
    """A model API whose requests are one ``post`` of an SDK client."""

    path: ClassVar[str]

    @abc.abstractmethod
    def request_body(self, request: ModelRequest) -> tuple[dict[str, Any], Any]:
        """The request's JSON body and the SDK's options taken out of it."""

    @abc.abstractmethod
    def reply(self, data: Any, model: str) -> ModelReply:
        """The reply of an answer's JSON (``model``: the one asked for)."""

    @abc.abstractmethod
    def assembler(self, model: str, on_delta: DeltaCallback) -> read.Assembler:
        """What reads a streamed answer."""

    @abc.abstractmethod
    def errors(self) -> AbstractContextManager[None]:
        """The SDK's errors around one request, raised as ``ModelError``."""

    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body that asks for a stream."""
        return {**body, "stream": True}

    def send(self, request: ModelRequest, *, on_delta: DeltaCallback | None = None) -> ModelReply:
        body, options = self.request_body(request)
        with self.errors():
            if on_delta is None:
                response = self.client.post(self.path, body=body, options=options, cast_to=httpx2.Response)
                return self.reply(read.parse_json(response.content), request.model)
            # A server that answers with one JSON body instead of a stream is read as such.
            response = self.client.post(self.path, body=self.stream_body(body), options=options,
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
                response = await client.post(self.path, body=body, options=options, cast_to=httpx2.Response)
                return self.reply(read.parse_json(response.content), request.model)
            response = await client.post(self.path, body=self.stream_body(body), options=options,
                                         cast_to=httpx2.Response, stream=True)  # fmt: skip
            model = body["model"]
            return await read.astreamed_reply(response, model, on_delta, self.reply, self.assembler(model, on_delta))
