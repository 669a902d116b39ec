"""``manage.py toolcalling_tools``: list the registered tools and assistants with their schemas."""

from __future__ import annotations

import json
from typing import Any, Literal, TypedDict

from django.core.management.base import BaseCommand, CommandParser

from toolcalling.toolkit import assistants, tools


class ToolItem(TypedDict):
    name: str
    function: str
    description: str
    requires_approval: bool | Literal["conditional"]
    return_direct: bool
    permissions: list[str]
    parameters: dict[str, Any]


# The functional form: "class" is a key of the JSON document and a keyword of Python.
AssistantItem = TypedDict("AssistantItem", {"id": str | None, "name": str, "class": str, "tools": list[str]})


class Command(BaseCommand):
    help = "List the registered tools (with their JSON schemas) and assistants."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON document instead of text.")

    def handle(self, *args: Any, **options: Any) -> None:
        tool_items: list[ToolItem] = [
            {
                "name": t.name,
                "function": t.module,
                "description": t.description,
                "requires_approval": t.requires_approval if isinstance(t.requires_approval, bool) else "conditional",
                "return_direct": t.return_direct,
                "permissions": list(t.permissions),
                "parameters": t.parameters,
            }
            for t in tools.all()
        ]
        assistant_items: list[AssistantItem] = [
            {
                "id": a.id,
                "name": a.name,
                "class": f"{a.__module__}.{a.__qualname__}",
                "tools": [t.name for t in a().resolve_tools()],
            }
            for a in assistants.all()
        ]
        if options["json"]:
            self.stdout.write(json.dumps({"tools": tool_items, "assistants": assistant_items}, indent=2))
            return
        self.stdout.write(self.style.MIGRATE_HEADING(f"Tools ({len(tool_items)})"))
        for item in tool_items:
            flags = [
                flag
                for flag, on in (
                    ("approval", item["requires_approval"]),
                    ("direct", item["return_direct"]),
                    (f"permissions={','.join(item['permissions'])}", item["permissions"]),
                )
                if on
            ]
            self.stdout.write(f"  {item['name']}  [{item['function']}]" + (f"  ({'; '.join(flags)})" if flags else ""))
            self.stdout.write(f"    {item['description'].splitlines()[0]}")
            self.stdout.write("    " + json.dumps(item["parameters"]))
        self.stdout.write(self.style.MIGRATE_HEADING(f"Assistants ({len(assistant_items)})"))
        for entry in assistant_items:
            self.stdout.write(f"  {entry['id']}  {entry['name']}  [{entry['class']}]")
            self.stdout.write(f"    tools: {', '.join(entry['tools']) or '(none)'}")
