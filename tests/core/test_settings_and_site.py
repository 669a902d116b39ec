"""Settings validation, system checks, migrations, the admin pages and the packaging contract."""

import io
import threading

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.test import override_settings

from toolcalling.conf import toolcalling_settings
from toolcalling.models import Conversation, Message, ToolCall


def test_defaults_and_overrides_follow_setting_changed():
    assert toolcalling_settings.MAX_CALLS_PER_TOOL == 40
    assert toolcalling_settings.MAX_TOTAL_TOOL_CALLS == 150
    with override_settings(TOOLCALLING={"MAX_CALLS_PER_TOOL": 3}):
        assert toolcalling_settings.MAX_CALLS_PER_TOOL == 3
        assert toolcalling_settings.ON_LIMIT_EXCEEDED == "return_error"
    assert toolcalling_settings.MAX_CALLS_PER_TOOL == 40


class SlowHook:
    """A hook whose making waits until released: a settings read in another thread that is still going on."""

    started = threading.Event()
    release = threading.Event()

    def __init__(self) -> None:
        SlowHook.started.set()
        SlowHook.release.wait(timeout=10)


def test_a_setting_read_in_another_thread_during_an_override_is_not_kept_after_it():
    # A server's thread may read a setting while a test's override ends: what it read from the override's
    # settings must not stay, or every later test reads the override's value (its keepalive, its hooks).
    read = []
    with override_settings(TOOLCALLING={"HOOKS": [f"{__name__}.SlowHook"]}):
        reader = threading.Thread(target=lambda: read.append(toolcalling_settings.HOOKS))
        reader.start()
        assert SlowHook.started.wait(timeout=10)
        threading.Timer(0.2, SlowHook.release.set).start()  # the reader goes on while the override ends
    reader.join(timeout=10)
    assert [type(hook) for hook in read[0]] == [SlowHook]
    assert toolcalling_settings.HOOKS == []


def test_api_key_and_base_url_default_to_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    with override_settings(TOOLCALLING={}):
        assert toolcalling_settings.API_KEY == "sk-env"
        assert toolcalling_settings.BASE_URL == "http://localhost:11434/v1"


@pytest.mark.parametrize(
    "value,fragment",
    [
        ({"MAX_CALLS": 3}, r"Unknown TOOLCALLING setting\(s\): MAX_CALLS\."),
        ({"TOOL_ERRORS": "ignore"}, "TOOL_ERRORS"),
        ({"ON_LIMIT_EXCEEDED": "warn"}, "ON_LIMIT_EXCEEDED"),
        ({"MAX_TOTAL_TOOL_CALLS": 0}, "positive integer"),
    ],
)
def test_bad_settings_are_errors(value, fragment):
    with override_settings(TOOLCALLING=value):
        with pytest.raises(ImproperlyConfigured, match=fragment):
            toolcalling_settings.MODEL  # noqa: B018
        from toolcalling.checks import check_settings

        assert [e.id for e in check_settings()] == ["toolcalling.E001"]


def test_system_checks_pass_for_the_test_site():
    # Without the database checks (this test has no database): Django 6.1's check runs them on every database.
    call_command("check", "--fail-level", "WARNING", databases=[])


def test_migrations_are_complete(db):
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


@pytest.fixture
def staff_client(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    return client


def test_admin_pages_show_conversations_messages_and_calls(staff_client, alice):
    conv = Conversation.objects.create(user=alice, assistant_id="helper", title="<b>orders</b>")
    msg = Message.objects.create(conversation=conv, role="assistant", content="")
    call = ToolCall.objects.create(
        conversation=conv,
        message=msg,
        call_id="call_1",
        name="ship",
        arguments={"order_no": "<script>"},
        status="failed",
    )
    for url in (
        "/admin/toolcalling/conversation/",
        f"/admin/toolcalling/conversation/{conv.pk}/change/",
        "/admin/toolcalling/toolcall/?status__exact=failed",
        f"/admin/toolcalling/toolcall/?conversation__user__id__exact={alice.pk}",
        f"/admin/toolcalling/conversation/?user__id__exact={alice.pk}&assistant_id=helper",
        f"/admin/toolcalling/toolcall/{call.pk}/change/",
        "/admin/toolcalling/message/",
    ):
        response = staff_client.get(url)
        assert response.status_code == 200, url
    page = staff_client.get(f"/admin/toolcalling/toolcall/{call.pk}/change/").content.decode()
    assert "&lt;script&gt;" in page and '<script>"' not in page
    listing = staff_client.get("/admin/toolcalling/conversation/?status__exact=idle").content.decode()
    assert "&lt;b&gt;orders&lt;/b&gt;" in listing


def test_no_endpoint_configured_is_a_warning(monkeypatch):
    from toolcalling.checks import check_model_endpoint

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with override_settings(TOOLCALLING={}):
        assert [w.id for w in check_model_endpoint()] == ["toolcalling.W001"]
    with override_settings(TOOLCALLING={"OFFLINE_MODEL": True}):
        assert check_model_endpoint() == []


def test_an_assistant_naming_an_unknown_tool_fails_the_checks():
    from toolcalling import Assistant
    from toolcalling.checks import check_assistants
    from toolcalling.toolkit import assistants

    class Broken(Assistant):
        id = "broken-check"
        tools = ["add", "no_such_tool"]

    try:
        errors = check_assistants()
        assert [e.id for e in errors] == ["toolcalling.E002"]
        assert "no_such_tool" in errors[0].msg
    finally:
        assistants.unregister("broken-check")
