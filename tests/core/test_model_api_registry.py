"""A model API is a backend of its own: its class builds its clients and says what it does differently, and a new
API is its module plus one line of the registry (``conf.MODEL_APIS``): the setting, the assistants' ``api`` and
``get_model_api`` all follow that line."""

from typing import Any
from unittest import mock

import pytest
from django.core.exceptions import ImproperlyConfigured

from toolcalling import Assistant
from toolcalling.assistant import API_CHOICES
from toolcalling.conf import MODEL_APIS
from toolcalling.model_apis import ChatCompletions, ModelReply, ModelRequest, get_model_api, load_model_api
from toolcalling.testutils import override_model, override_toolcalling

pytestmark = pytest.mark.django_db


class Dialect(ChatCompletions):
    """A fourth API: an OpenAI-compatible vendor's dialect, under a name of its own."""

    sent: list[str] = []

    def send(self, request: ModelRequest, **kwargs: Any) -> ModelReply:
        self.sent.append(request.model)
        return super().send(request, **kwargs)


DIALECT = {"dialect": f"{__name__}.Dialect"}
API_CLASSES = {"chat_completions": "ChatCompletions", "responses": "Responses", "anthropic": "Anthropic"}


def test_a_fourth_api_is_one_registry_line_and_runs_a_turn_against_the_strict_server(alice):
    Dialect.sent.clear()
    with mock.patch.dict(MODEL_APIS, DIALECT), override_model(API="dialect", MODEL="dialect-1") as model:
        assert "dialect" in API_CHOICES  # what the setting and an assistant's api may name
        assert type(get_model_api()) is Dialect
        model.calls(("add", {"a": 2, "b": 3}))
        model.reply("5")
        result = Assistant.get("helper").run(alice, "2 + 3?")
        model.assert_done()  # the strict server refused nothing
    assert result.reply == "5"
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert Dialect.sent == ["dialect-1", "dialect-1"]
    with pytest.raises(ImproperlyConfigured, match="Unknown model API 'dialect'"):
        load_model_api("dialect")  # the line gone, the name is unknown again
    assert "dialect" not in API_CHOICES


def test_each_api_builds_its_own_clients_from_settings():
    with override_toolcalling(API_KEY="k", BASE_URL="http://127.0.0.1:9/v1", OFFLINE_MODEL=False):
        for name, implementation in API_CLASSES.items():
            api = load_model_api(name).from_settings()
            assert type(api).__name__ == implementation
            assert api.client.api_key == "k"
            assert api.build_async_client is not None and api.build_async_client().api_key == "k"
