"""Tool search: offer one ``search_tools`` tool instead of a large tool set, and the tools it has found."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from ..conf import toolcalling_settings
from ..exceptions import ImproperlyDefined
from ._tool import Tool, make_tool

if TYPE_CHECKING:
    from ..models import Conversation
    from ._assistant import AssistantLike

SEARCH_TOOL_NAME = "search_tools"
STATE_KEY = "tool_search"
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def tokenize(text: str) -> list[str]:
    """Words of names and prose: ``getOrderStatus`` and ``get_order_status`` both give get, order, status."""
    words = [w.lower() for w in _WORD.findall(text)]
    # A plural and its singular should match ("orders" finds "order"); a full stemmer is not needed for that.
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def tool_text(tool: Tool) -> list[str]:
    """The words a tool is found by; its name counts three times, it says the most in the fewest words."""
    words = tokenize(tool.name) * 3 + tokenize(tool.description)
    for name, prop in (tool.parameters.get("properties") or {}).items():
        words += tokenize(name) + tokenize(str(prop.get("description", "")))
    return words


class ToolIndex:
    """A small BM25 index over tools; no external dependencies, built in microseconds for hundreds of tools."""

    k1 = 1.2
    b = 0.75

    def __init__(self, tools: list[Tool]) -> None:
        self.tools = tools
        self.docs = [Counter(tool_text(t)) for t in tools]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg_length = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        frequency: Counter[str] = Counter()
        for doc in self.docs:
            frequency.update(doc.keys())
        n = len(self.docs)
        self.idf = {term: math.log(1 + (n - df + 0.5) / (df + 0.5)) for term, df in frequency.items()}

    def search(self, query: str, limit: int = 5) -> list[Tool]:
        """The best matches for ``query``, best first; tools that share no word with it are left out."""
        terms = set(tokenize(query))
        scored = []
        for index, doc in enumerate(self.docs):
            score = 0.0
            norm = self.k1 * (1 - self.b + self.b * self.lengths[index] / (self.avg_length or 1))
            for term in terms:
                tf = doc.get(term, 0)
                if tf:
                    score += self.idf[term] * tf * (self.k1 + 1) / (tf + norm)
            if score > 0:
                scored.append((score, index))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [self.tools[index] for _, index in scored[:limit]]


def search_enabled(assistant: AssistantLike, tool_count: int) -> bool:
    """``tool_search`` True or False decides; None turns it on above ``TOOL_SEARCH_THRESHOLD`` tools."""
    if assistant.tool_search is None:
        return tool_count > toolcalling_settings.TOOL_SEARCH_THRESHOLD
    return bool(assistant.tool_search)


class ToolSearch:
    """Per turn: the search tool, the index, and the tools found so far (kept in ``Conversation.state``)."""

    def __init__(self, tools: dict[str, Tool], conversation: Conversation, *, max_results: int = 5) -> None:
        if SEARCH_TOOL_NAME in tools:
            raise ImproperlyDefined(
                f"A tool is named {SEARCH_TOOL_NAME!r}, the name tool search uses; rename it or set tool_search=False."
            )
        self.conversation = conversation
        self.max_results = max_results
        self.index = ToolIndex(list(tools.values()))
        self.tool = self._make_tool()

    @property
    def found(self) -> list[str]:
        return list((self.conversation.state or {}).get(STATE_KEY, {}).get("found", []))

    def offered(self, tools: dict[str, Tool]) -> list[Tool]:
        """The search tool first, then every tool found in this conversation that is still available."""
        return [self.tool, *(tools[name] for name in self.found if name in tools)]

    def search(self, query: str) -> list[dict[str, Any]]:
        """Find tools, remember them for this conversation, and describe them to the model."""
        matches = self.index.search(query, self.max_results)
        found = self.found
        new = [t.name for t in matches if t.name not in found]
        if new:
            state = dict(self.conversation.state or {})
            state[STATE_KEY] = {**state.get(STATE_KEY, {}), "found": found + new}
            self.conversation.state = state
            self.conversation.save(update_fields=["state"])
        return [{"name": t.name, "description": t.description} for t in matches]

    def _make_tool(self) -> Tool:
        def search_tools(
            query: Annotated[str, Field(description="What you want to do, in a few words, e.g. 'cancel an order'.")],
        ) -> dict[str, Any]:
            """Find the tools for a task. Only tools found this way can be called; they are offered from your next
            answer on. Search again with other words if nothing fits."""
            matches = self.search(query)
            if not matches:
                return {"tools": [], "note": "No tool matches; try other words."}
            return {"tools": matches, "note": "These tools can be called from now on."}

        return make_tool(search_tools, name=SEARCH_TOOL_NAME)
