"""The OpenAPI description: clean under drf-spectacular's strictest settings, complete, and optional."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "/api/toolcalling/"


@pytest.fixture(scope="module")
def document(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("schema") / "schema.yaml"
    # --fail-on-warn: a warning (an unguessable serializer, an enum name clash) fails like an error.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    return yaml.safe_load(out.read_text())


def test_the_schema_validates_without_a_warning_and_covers_every_endpoint(document):
    paths = {p: ops for p, ops in document["paths"].items() if p.startswith(PREFIX)}
    operations = {(p.removeprefix(PREFIX), m) for p, ops in paths.items() for m in ops}
    assert operations == {
        ("assistants/", "get"),
        ("attachments/", "post"),
        ("attachments/{id}/content/", "get"),
        ("conversations/", "get"),
        ("conversations/", "post"),
        ("conversations/{id}/", "get"),
        ("conversations/{id}/", "patch"),
        ("conversations/{id}/", "delete"),
        ("conversations/{id}/cancel/", "post"),
        ("conversations/{id}/stop/", "post"),
        ("conversations/{id}/messages/", "get"),
        ("conversations/{id}/messages/", "post"),
        ("conversations/{id}/events/", "get"),
        ("tool-calls/", "get"),
        ("tool-calls/{id}/", "get"),
        ("tool-calls/{id}/approve/", "post"),
        ("tool-calls/{id}/reject/", "post"),
        ("tool-calls/{id}/settle/", "post"),
        ("tool-calls/{id}/result/", "post"),
        ("usage/", "get"),
        ("mcp/{assistant_id}/", "post"),
        ("ai-sdk/chat/", "post"),
        ("ai-sdk/chat/{chat_id}/stream/", "get"),
        ("ag-ui/", "post"),
        ("ai-sdk/chat/{chat_id}/messages/", "get"),
        ("ag-ui/{thread_id}/messages/", "get"),
    }
    for path, ops in paths.items():
        for method, operation in ops.items():
            responses = operation["responses"]
            assert {"401", "403"} <= set(responses), (method, path)  # every endpoint needs a signed-in user
            for status, response in responses.items():
                if status.startswith(("4", "5")):
                    assert "application/json" in response["content"], (method, path, status)


def test_posting_a_message_documents_its_variants_and_errors(document):
    post = document["paths"][PREFIX + "conversations/{id}/messages/"]["post"]
    responses = post["responses"]
    assert set(responses) == {"200", "201", "202", "400", "401", "403", "404", "409", "413", "422", "429", "502", "503"}
    assert list(responses["200"]["content"]) == ["text/event-stream"]
    assert responses["201"]["content"]["application/json"]["schema"]["$ref"].endswith("/TurnResult")
    assert responses["202"]["content"]["application/json"]["schema"]["$ref"].endswith("/BackgroundTurn")
    assert responses["502"]["content"]["application/json"]["schema"]["$ref"].endswith("/TurnError")
    assert "toolcalling_turn" in post["description"]
    components = document["components"]["schemas"]
    assert components["MessageInput"]["properties"]["content"]["maxLength"] == 20000
    assert set(components["Error"]["required"]) == {"detail", "code", "status"}
    assert components["ToolCall"]["properties"]["label"]["type"] == "string"
    bodies = post["requestBody"]["content"]
    assert set(bodies) == {"application/json", "multipart/form-data"}
    assert components["MessageMultipart"]["properties"]["files"]["items"]["format"] == "binary"
    assert components["MessageInput"]["properties"]["attachments"]["items"]["format"] == "uuid"
    history = document["paths"][PREFIX + "conversations/{id}/messages/"]["get"]
    assert {p["name"] for p in history["parameters"]} >= {"cursor", "page_size"}
    events = document["paths"][PREFIX + "conversations/{id}/events/"]["get"]
    assert list(events["responses"]["200"]["content"]) == ["text/event-stream"]


def test_an_upload_is_described_as_multipart_with_its_errors(document):
    post = document["paths"][PREFIX + "attachments/"]["post"]
    assert list(post["requestBody"]["content"]) == ["multipart/form-data"]
    assert set(post["responses"]) == {"201", "400", "401", "403", "413", "429", "503"}  # 503: database_unavailable
    assert "unsupported_attachment" in post["responses"]["400"]["description"]
    assert "attachment_too_large" in post["responses"]["413"]["description"]
    assert "upload_quota_exceeded" in post["responses"]["413"]["description"]
    assert "toolcalling_upload" in post["responses"]["429"]["description"]
    created = document["components"]["schemas"]["Attachment"]
    assert set(created["properties"]) == {"id", "name", "content_type", "size", "url"}
    content = document["paths"][PREFIX + "attachments/{id}/content/"]["get"]
    kinds = content["responses"]["200"]["content"]
    assert set(kinds) == {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}
    assert {kind["schema"]["format"] for kind in kinds.values()} == {"binary"}


def test_the_demo_sites_schema_is_clean_too(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


WITHOUT_SPECTACULAR = textwrap.dedent(
    """
    import sys

    sys.modules["drf_spectacular"] = None  # as if it were not installed: importing it fails

    import django
    from django.conf import settings
    settings.configure(
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "rest_framework", "toolcalling",
                        "tests.testapp"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        ROOT_URLCONF="toolcalling.urls", USE_TZ=True, SECRET_KEY="x", ALLOWED_HOSTS=["testserver"],
        TOOLCALLING={"OFFLINE_MODEL": True}, CELERY_TASK_ALWAYS_EAGER=True,
    )
    django.setup()
    from django.core.management import call_command
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("alice"))
    conversation = client.post("/conversations/", {"assistant": "helper"}, format="json").json()
    answer = client.post(f"/conversations/{conversation['id']}/messages/", {"content": "add 2 and 3"}, format="json")
    assert answer.status_code == 201, answer.content
    assert "toolcalling.api.openapi" not in sys.modules
    print("WORKS WITHOUT DRF-SPECTACULAR")
    """
)


def test_the_app_works_without_drf_spectacular():
    result = subprocess.run([sys.executable, "-c", WITHOUT_SPECTACULAR], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "WORKS WITHOUT DRF-SPECTACULAR" in result.stdout
