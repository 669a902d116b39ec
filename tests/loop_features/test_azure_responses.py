"""Azure OpenAI's Responses API on its v1 surface (``https://<resource>.openai.azure.com/openai/v1/``, the deployment's
name as the model), through the real SDK: with the plain ``openai.OpenAI`` client that ``BASE_URL`` builds, and with
``openai.AzureOpenAI`` from a ``CLIENT_FACTORY`` (its ``api-key`` header and ``api-version`` query). A reasoning
model's tool round trip and the next turn go out as on OpenAI: ``store: false``, each answer's items as issued, the
reasoning with its encrypted content, which is what Azure takes without storing anything (twentyhq/twenty PR
#23182 moved its Azure turns to exactly this to end "Item with id 'rs_…' not found")."""

from collections.abc import Iterator

import openai
import pytest
from django.conf import settings

from toolcalling import Assistant
from toolcalling.testing import OpenAICompatibleServer, ScriptedModel
from toolcalling.testutils import override_toolcalling

API_VERSION = "preview"


def azure_client() -> openai.AzureOpenAI:
    """A site's ``CLIENT_FACTORY`` for Azure: the key in ``api-key``, an ``api-version`` on each request."""
    return openai.AzureOpenAI(base_url=settings.TOOLCALLING["BASE_URL"], api_key="azure-key",
                              api_version=API_VERSION, max_retries=0)  # fmt: skip


@pytest.fixture(params=["base_url", "azure_client"])
def azure(request, db) -> Iterator[tuple[ScriptedModel, OpenAICompatibleServer]]:
    model = ScriptedModel()
    with OpenAICompatibleServer(model) as server:
        factory = f"{__name__}.azure_client" if request.param == "azure_client" else None
        with override_toolcalling(API="responses", MODEL="gpt-5-mini", BASE_URL=f"{server.url}/openai/v1/",
                                  API_KEY="azure-key", MAX_RETRIES=0, OFFLINE_MODEL=False,
                                  CLIENT_FACTORY=factory):  # fmt: skip
            yield model, server
    assert not model.rejected, [r.errors for r in model.rejected]
    assert not model.unexpected, "a request arrived with no reply queued"


def test_a_reasoning_tool_round_trip_goes_to_azures_v1_surface_as_issued(azure, alice):
    model, server = azure
    model.calls(("add", {"a": 1, "b": 2}), ("whoami", {}))
    model.reply("3, alice.")
    result = Assistant.get("helper").run(alice, "1 + 2, and who am I?")
    model.reply("You asked for a sum.")
    Assistant.get("helper").run(alice, "What did I ask?", conversation=result.conversation)

    paths = list(server.backend.paths)
    assert len(paths) == 3 and all(path.startswith("/openai/v1/responses") for path in paths)
    if settings.TOOLCALLING["CLIENT_FACTORY"]:
        assert all(path.endswith(f"?api-version={API_VERSION}") for path in paths)
    for request in model.requests:
        assert request["store"] is False and request["include"] == ["reasoning.encrypted_content"]
    answers = [m for m in result.messages if m.role == "assistant"]
    sent = [item for item in model.requests[-1]["input"] if item.get("type") in ("reasoning", "function_call")]
    first = [item for item in answers[0].provider_items if item["type"] != "issued_to"]
    assert sent[:3] == first and first[0]["type"] == "reasoning" and first[0]["encrypted_content"]
    assert all(item["id"] for item in first)
