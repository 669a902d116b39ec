"""Without the ``[mcp]`` extra the app imports and works, and using MCP says what to install."""

import json
import subprocess
import sys
import textwrap

from .helpers import ROOT

SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.modules["mcp"] = None  # as if the mcp package were not installed: importing it fails

    import django
    from django.conf import settings

    settings.configure(
        SECRET_KEY="x",
        USE_TZ=True,
        ALLOWED_HOSTS=["*"],
        ROOT_URLCONF="toolcalling.urls",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "rest_framework", "toolcalling",
                        "tests.testapp"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        TOOLCALLING={"API_KEY": "x"},
    )
    django.setup()
    from django.core.management import call_command
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    call_command("migrate", verbosity=0)
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("alice"))
    out = {"assistants": client.get("/assistants/").status_code}
    mcp = client.post("/mcp/helper/", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, format="json")
    out["mcp"] = [mcp.status_code, mcp.json()]
    from toolcalling.mcp import MCPServer
    try:
        MCPServer(url="https://mcp.example.com/mcp")
    except Exception as exc:
        out["server"] = [type(exc).__name__, str(exc)]
    print(json.dumps(out))
    """
)


def test_the_app_works_without_the_sdk_and_mcp_says_what_to_install():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    hint = "MCP needs the mcp package: pip install 'django-toolcalling[mcp]'."
    assert out["assistants"] == 200
    assert out["mcp"] == [501, {"detail": hint, "code": "mcp_not_installed", "status": None}]
    assert out["server"] == ["MCPNotInstalled", hint]
