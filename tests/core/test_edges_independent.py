"""No edge package imports another: the REST API, the frontends' protocols, MCP and the admin each build on the HTTP
layer they share (``toolcalling.web``) and the packages below it, never on each other, so one edge can change
without another's behaviour changing with it."""

import itertools

import grimp

EDGES = ("toolcalling.api", "toolcalling.frontends", "toolcalling.mcp", "toolcalling.admin")


def test_no_edge_imports_another_even_for_type_checking():
    graph = grimp.build_graph("toolcalling", exclude_type_checking_imports=False)
    crossings = [
        f"{edge} -> {other}"
        for edge, other in itertools.permutations(EDGES, 2)
        if graph.find_shortest_chain(importer=edge, imported=other, as_packages=True) is not None
    ]
    assert crossings == []
