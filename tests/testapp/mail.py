"""E-mail to the approvers of a waiting call, as the demo site sends it (for the MCP stdio tests)."""

from typing import Any

from django.core.mail import send_mail

from toolcalling.notifications import approval_notice, approvers


def tell_approvers(sender: Any, tool_call: Any, **kwargs: Any) -> None:
    recipients = [user.email for user in approvers(tool_call)]
    if recipients:
        notice = approval_notice(tool_call)
        send_mail(notice.subject, notice.body, None, recipients)
