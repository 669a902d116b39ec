"""Tools of the test site, found by autodiscovery."""

import os
import time
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from toolcalling import ToolContext, tool


class Address(BaseModel):
    street: str
    city: str


@tool
def whoami(ctx: ToolContext) -> dict:
    """Tell who the current user is."""
    return {"username": ctx.user.get_username(), "tenant": ctx.extra.get("tenant")}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool
def ship(
    ctx: ToolContext,
    order_no: Annotated[str, Field(description="Order number, e.g. 20250719-0032")],
    speed: Literal["standard", "express"] = "standard",
    address: Address | None = None,
) -> dict:
    """Ship an order."""
    return {"order_no": order_no, "speed": speed, "city": address.city if address else None}


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("boom")


@tool(return_direct=True)
def direct_answer(text: str) -> str:
    """Return text directly to the user."""
    return f"DIRECT: {text}"


@tool(permissions=["auth.view_user"])
def list_users() -> list[str]:
    """List user names (staff only)."""
    from django.contrib.auth import get_user_model

    return list(get_user_model().objects.values_list("username", flat=True))


@tool(requires_approval=True)
def delete_everything(ctx: ToolContext, confirm: str) -> str:
    """Delete everything (gated)."""
    return f"deleted for {ctx.user.get_username()} ({confirm})"


@tool
def wait_for_release(marker: str) -> str:
    """Wait until the test releases this call: writes <marker>.started, then waits for <marker>.release.

    Lets a test act (stop the turn, say) while the tool runs, in this process or on a worker.
    """
    # Tells the test which process runs it; written under another name and renamed, so that the test, which
    # waits for the file to exist, never reads it before its pid is in it.
    with open(f"{marker}.started.tmp", "w") as started:
        started.write(str(os.getpid()))
    os.replace(f"{marker}.started.tmp", f"{marker}.started")
    for _ in range(600):
        if os.path.exists(f"{marker}.release"):
            return "released"
        time.sleep(0.05)
    return "gave up waiting"


@tool
def attached_files(ctx: ToolContext) -> list[dict]:
    """List the files of this conversation, with their first bytes."""
    found = []
    for file in ctx.attachments:
        with file.open() as f:
            head = f.read(8)
        found.append({"name": file.name, "type": file.content_type, "size": file.size, "head": head.hex()})
    return found
