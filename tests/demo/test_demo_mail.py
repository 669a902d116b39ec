"""The demo's approval notices go to the console, configured the way the running Django wants it: ``MAILERS`` from
Django 6.1 on (``EMAIL_BACKEND`` is deprecated there and warns each time mail is sent), ``EMAIL_BACKEND`` before."""

import os
import subprocess
import sys

from tests.packaging.conftest import ROOT

SEND = """
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import django
    django.setup()
    from django.core.mail import send_mail
    send_mail("Approval needed", "A call waits.", None, ["staff@example.com"])
for warning in caught:
    if "MAIL" in str(warning.message):
        print("WARNED", warning.category.__name__, warning.message)
"""


def test_the_demo_sends_mail_to_the_console_without_a_deprecation_warning():
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TOOLCALLING_", "OPENAI_"))}
    environment["DJANGO_SETTINGS_MODULE"] = "demo_site.settings"
    result = subprocess.run(
        [sys.executable, "-c", SEND], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Subject: Approval needed" in result.stdout  # the console backend wrote it
    assert "WARNED" not in result.stdout, result.stdout
