"""Gated tools of the approval tests."""

import os
import time

from django.db.models import F

from toolcalling import ToolContext, tool

from .models import Counter


@tool(requires_approval=True)
def bump(ctx: ToolContext, name: str, by: int = 1) -> dict:
    """Add to a named counter (a staff member approves it first).

    Args:
        name: The counter's name.
        by: How much to add.
    """
    counter, _ = Counter.objects.get_or_create(name=name)
    Counter.objects.filter(pk=counter.pk).update(value=F("value") + by)
    counter.refresh_from_db()
    return {
        "name": name,
        "value": counter.value,
        "user": ctx.user.get_username(),
        "tenant": ctx.extra.get("tenant"),
        "pid": os.getpid(),  # tells the tests which process ran it
    }


def refund_needs_approval(ctx: ToolContext, args: dict) -> bool:
    return args["amount"] > 100


@tool(requires_approval=refund_needs_approval)
def refund(ctx: ToolContext, order_no: str, amount: float) -> str:
    """Refund an order; refunds over 100 wait for a staff member."""
    counter, _ = Counter.objects.get_or_create(name=f"refund-{order_no}")
    Counter.objects.filter(pk=counter.pk).update(value=F("value") + 1)
    return f"refunded {amount:.2f} on {order_no} for {ctx.user.get_username()}"


@tool(requires_approval=True)
def slow_bump(ctx: ToolContext, name: str, release_file: str) -> str:
    """Add one to a counter, then wait until a file exists (so a test can stop its worker mid-run)."""
    with open(f"{release_file}.pid", "w") as pid_file:
        pid_file.write(str(os.getpid()))  # tells the test which process runs it
    counter, _ = Counter.objects.get_or_create(name=name)
    Counter.objects.filter(pk=counter.pk).update(value=F("value") + 1)
    for _ in range(600):
        if os.path.exists(release_file):
            return "released"
        time.sleep(0.1)
    return "gave up waiting"
