"""Per-tool numbers for the admin: calls, failures and mean duration, computed in one aggregate query."""

from __future__ import annotations

from typing import Any

from django.db.models import Avg, Count, Max, Q

from ..models import ToolCall


def tool_stats() -> list[dict[str, Any]]:
    """One row per tool name, most called first. ``failure_rate`` is failed / finished (succeeded or failed)."""
    rows = (
        ToolCall.objects.values("name")
        .annotate(
            calls=Count("id"),
            succeeded=Count("id", filter=Q(status=ToolCall.Status.SUCCEEDED)),
            failed=Count("id", filter=Q(status=ToolCall.Status.FAILED)),
            rejected=Count("id", filter=Q(status=ToolCall.Status.REJECTED)),
            mean_duration_ms=Avg("duration_ms"),
            last_called=Max("created_at"),
        )
        .order_by("-calls", "name")
    )
    out: list[dict[str, Any]] = []
    for row in rows:
        finished = row["succeeded"] + row["failed"]
        out.append({**row, "failure_rate": row["failed"] / finished if finished else None})
    return out
