"""Nothing below ``toolcalling.assistant`` imports it, not even to type-check: those layers know an assistant as
``toolkit.AssistantLike``, so ``Assistant`` builds on them and no cycle runs back through it. (import-linter's
contracts in ``make lint`` leave type-checking imports out; this one counts them.)"""

import grimp

BELOW_THE_ASSISTANT = (
    "toolcalling.engine",
    "toolcalling.model_apis",
    "toolcalling.toolkit",
    "toolcalling.streaming",
    "toolcalling.builtin_hooks",
    "toolcalling.usage",
    "toolcalling.models",
    "toolcalling.signals",
    "toolcalling.hooks",
    "toolcalling.conf",
    "toolcalling.exceptions",
    "toolcalling.testing",
)


def below(module: str) -> bool:
    return any(module == layer or module.startswith(layer + ".") for layer in BELOW_THE_ASSISTANT)


def test_no_module_below_the_assistant_imports_it_even_for_type_checking():
    graph = grimp.build_graph("toolcalling", exclude_type_checking_imports=False, cache_dir=None)
    importers = graph.find_modules_that_directly_import("toolcalling.assistant")
    # The graph holds type-checking imports: the MCP endpoint's is one (it imports Assistant only to type-check).
    assert "toolcalling.mcp._serving" in importers
    assert sorted(m for m in importers if below(m)) == []
