"""Gated tools of the approval tests."""

import os
import time

from django.db.models import F

from toolcalling import ToolContext, tool

from .models import Counter


def bump_preview(ctx: ToolContext, args: dict) -> dict:
    """The counter as it is when an approver looks; a locked counter makes the preview itself fail."""
    if args["name"] == "locked":
        raise PermissionError("the counter 'locked' cannot be read")
    row = Counter.objects.filter(name=args["name"]).first()
    now = row.value if row else 0
    return {"counter": args["name"], "now": now, "after": now + args.get("by", 1), "for": ctx.user.get_username()}


@tool(requires_approval=True, approval_preview=bump_preview)
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
    with open(f"{release_file}.pid.tmp", "w") as pid_file:  # renamed once whole: a test waits for it to exist
        pid_file.write(str(os.getpid()))  # tells the test which process runs it
    os.replace(f"{release_file}.pid.tmp", f"{release_file}.pid")
    counter, _ = Counter.objects.get_or_create(name=name)
    Counter.objects.filter(pk=counter.pk).update(value=F("value") + 1)
    for _ in range(600):
        if os.path.exists(release_file):
            return "released"
        time.sleep(0.1)
    return "gave up waiting"


def move_points_preview(ctx: ToolContext, args: dict) -> str:
    row = Counter.objects.filter(name=args["name"]).first()
    return f"{args['name']} has {row.value if row else 0} points now; it gets {args['points']} more."


@tool(requires_approval=True, approver="user", approval_preview=move_points_preview)
def move_points(ctx: ToolContext, name: str, points: int) -> str:
    """Add points to a counter; the user confirms it first."""
    counter, _ = Counter.objects.get_or_create(name=name)
    Counter.objects.filter(pk=counter.pk).update(value=F("value") + points)
    return f"{name} got {points} points for {ctx.user.get_username()}"


@tool(requires_approval=True, permissions=["approvalapp.change_counter"])
def reset(ctx: ToolContext, name: str) -> str:
    """Set a counter back to zero (needs the change_counter permission, and a staff member's approval)."""
    counter, _ = Counter.objects.get_or_create(name=f"reset-{name}")
    Counter.objects.filter(pk=counter.pk).update(value=F("value") + 1)
    return f"reset {name}"


def stamp_path(key: str) -> str:
    """Where ``stamp`` writes: the run's directory, shared by the test process and its workers."""
    directory = os.path.join(os.environ.get("TOOLCALLING_TEST_VAR", "/tmp"), "stamps")
    os.makedirs(directory, exist_ok=True)
    return os.path.join(directory, key)


@tool(requires_approval=True)
def stamp(key: str) -> str:
    """Write down when the tool started (bench/approval_latency.py times approvals with it).

    Args:
        key: The name of the stamp.
    """
    with open(stamp_path(key), "w") as out:
        out.write(repr(time.time()))
    return "stamped"


def _deliver(kind: str, ctx: ToolContext) -> str:
    """Count one delivery per idempotency key, as an external service that takes one would see them."""
    key = ctx.idempotency_key
    counter, _ = Counter.objects.get_or_create(name=f"{kind}-{key}"[:50])
    Counter.objects.filter(pk=counter.pk).update(value=F("value") + 1)
    return f"{kind} sent with key {key}"


@tool
def charge(ctx: ToolContext, amount: int) -> str:
    """Charge the user's card (not safe to run twice)."""
    return _deliver("charge", ctx)


@tool(idempotent=True)
def send_receipt(ctx: ToolContext, amount: int) -> str:
    """Send a receipt; the mail service drops a second one with the same key."""
    return _deliver("receipt", ctx)


@tool(requires_approval=True)
def approved_charge(ctx: ToolContext, amount: int) -> str:
    """Charge the user's card once a staff member approves it."""
    return _deliver("charge", ctx)


@tool(requires_approval=True, idempotent=True)
def approved_receipt(ctx: ToolContext, amount: int) -> str:
    """Send a receipt once a staff member approves it."""
    return _deliver("receipt", ctx)


@tool(requires_approval=True, approver="user")
def confirmed_charge(ctx: ToolContext, amount: int) -> str:
    """Charge the user's card once the user confirms it."""
    return _deliver("charge", ctx)


@tool(atomic=True)
def book_seat(ctx: ToolContext, seat: str) -> str:
    """Book a seat; writes only to the site's database, in the transaction that stores its result."""
    counter, _ = Counter.objects.get_or_create(name=f"seat-{seat}")
    Counter.objects.filter(pk=counter.pk).update(value=F("value") + 1)
    if seat == "broken":
        raise ValueError("the seat is broken")
    return f"booked {seat}"


def _send(kind: str, ctx: ToolContext, amount: int) -> str:
    """POST to the chaos run's counting service (bench/chaos.py), which counts deliveries per idempotency key."""
    import urllib.request

    url = f"{os.environ['TOOLCALLING_CHAOS_SERVICE']}/{kind}/{ctx.idempotency_key}"
    with urllib.request.urlopen(urllib.request.Request(url, data=str(amount).encode(), method="POST"), timeout=10):
        pass
    return f"{kind} {amount} sent"


@tool
def courier_charge(ctx: ToolContext, amount: int) -> str:
    """Charge the user's card through the payment service (not safe to run twice)."""
    return _send("charge", ctx, amount)


@tool(idempotent=True)
def courier_receipt(ctx: ToolContext, amount: int) -> str:
    """Send a receipt through the mail service, which drops a second one with the same key."""
    return _send("receipt", ctx, amount)
