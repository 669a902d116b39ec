import os

from django.apps import AppConfig


class TestAppConfig(AppConfig):
    name = "tests.testapp"
    label = "testapp"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        if os.environ.get("TOOLCALLING_TEST_CONSOLE_MAIL"):  # see tests/settings.py
            from toolcalling.signals import approval_requested

            from .mail import tell_approvers

            approval_requested.connect(tell_approvers, dispatch_uid="testapp.tell_approvers")
