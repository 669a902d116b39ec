"""Tell the shop's staff by e-mail (the console backend in the demo) when a tool call waits for them: for their
approval, or for them to say what happened to a call whose process stopped while it ran."""

from typing import Any

from django.core.mail import send_mail

from toolcalling.notifications import approval_notice, approvers


def tell_approvers(sender: Any, tool_call: Any, **kwargs: Any) -> None:
    """Receiver of ``toolcalling.signals.approval_requested`` and ``tool_call_outcome_unknown``: the link opens
    the call's page in the admin."""
    recipients = [user.email for user in approvers(tool_call)]
    if not recipients:  # e.g. a call the customer confirms on the chat page
        return
    notice = approval_notice(tool_call)
    send_mail(notice.subject, notice.body, None, recipients)
