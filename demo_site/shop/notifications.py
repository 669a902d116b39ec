"""Tell the shop's staff by e-mail (the console backend in the demo) when a tool call waits for them."""

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.mail import send_mail
from django.db.models import Q
from django.urls import reverse


def tell_approvers(sender: Any, tool_call: Any, **kwargs: Any) -> None:
    """Receiver of ``toolcalling.signals.approval_requested``."""
    perm = Permission.objects.get(codename="approve_toolcall", content_type__app_label="toolcalling")
    approvers = (
        get_user_model()
        .objects.filter(Q(user_permissions=perm) | Q(groups__permissions=perm) | Q(is_superuser=True), is_active=True)
        .exclude(email="")
        .distinct()
    )
    url = reverse("admin:toolcalling_toolcall_change", args=[tool_call.pk])
    send_mail(
        f"Approval needed: {tool_call.name}",
        f"{tool_call.conversation.user} asked for {tool_call.name}({tool_call.arguments}).\nDecide: {url}",
        None,
        [a.email for a in approvers],
    )
