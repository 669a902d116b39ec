"""Mail the site sends while an eval runs stays in memory, whichever way the site configures its mail: ``MAILERS``
(Django 6.1's ``startproject`` writes it) or ``EMAIL_BACKEND`` before 6.1. The calls it is about are rolled back, so
no staff member may be told of them."""

import django
import pytest
from django.core import mail
from django.test.utils import override_settings
from pydantic_evals import Case, Dataset

from toolcalling.evals import EvalInputs, Transcript, evaluate
from toolcalling.models import ToolCall
from toolcalling.testutils import override_toolcalling

FILE_BACKEND = "django.core.mail.backends.filebased.EmailBackend"


def site_mail_to_files(path) -> override_settings:
    """The site's mail goes out for real (to files here): through MAILERS where Django has it, as a new site has it."""
    if django.VERSION >= (6, 1):
        return override_settings(
            MAILERS={
                "default": {"BACKEND": FILE_BACKEND, "OPTIONS": {"file_path": str(path)}},
                "staff": {"BACKEND": FILE_BACKEND, "OPTIONS": {"file_path": str(path)}},
            }
        )
    return override_settings(EMAIL_BACKEND=FILE_BACKEND, EMAIL_FILE_PATH=str(path))


@pytest.mark.filterwarnings("error:.*(EMAIL_BACKEND|MAILERS)")
@override_toolcalling(OFFLINE_MODEL=True)
def test_the_approval_notice_of_a_waiting_call_stays_in_memory(shop, tmp_path):
    waits = EvalInputs(assistant="shop", user="alice", message="Cancel order 20251120-0007")
    dataset = Dataset[EvalInputs, Transcript, None](name="mail", cases=[Case(name="waits", inputs=waits)])
    mail.outbox = []
    with site_mail_to_files(tmp_path / "sent"):
        report, _ = evaluate(dataset)
    [case] = report.cases
    assert [c.status for c in case.output.tool_calls] == [ToolCall.Status.AWAITING_APPROVAL]
    assert not (tmp_path / "sent").exists() or not any((tmp_path / "sent").iterdir()), "a notice went out for real"
    [notice] = mail.outbox  # the demo shop tells its staff of the waiting call (demo_site/shop/notifications.py)
    assert "cancel_order" in notice.body and "admin@example.com" in notice.to
