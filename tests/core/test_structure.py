"""The app's structure rules: one concept, one module.

- No class has methods in more than one module: no mixin from another module that calls back into the class that
  inherits it (a method it calls that only an heir defines), no ``NotImplementedError`` stub that an heir in
  another module fills in, and no free functions typed with a class that its own module calls (those make an
  import circle, the next rule).
- No import circle between the modules of a package, counting the imports made only for type checking.
- No edge package (``api``, ``frontends``, ``mcp``, ``admin``) imports another: what two edges share lives below
  them.
- A module is as long as its concept needs; one over ``SOFT_LIMIT`` lines gets a warning to look at it, not a
  failure (the suite's summary lists it).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import pkgutil
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import grimp

import toolcalling

PACKAGE = Path(toolcalling.__file__).parent
EDGES = ("toolcalling.api", "toolcalling.frontends", "toolcalling.mcp", "toolcalling.admin")
SOFT_LIMIT = 800
# Optional extras a module may need: a module whose extra is not installed is left out.
OPTIONAL = ("ag_ui", "mcp", "celery", "django_tasks", "drf_spectacular", "pydantic_evals", "anthropic")


def app_modules() -> Iterator[object]:
    for info in pkgutil.walk_packages([str(PACKAGE)], "toolcalling."):
        if ".migrations" in info.name or ".management.commands" in info.name:
            continue
        try:
            yield importlib.import_module(info.name)
        except ImportError as exc:
            if not any(name in str(exc) for name in OPTIONAL):
                raise


@functools.cache
def app_classes() -> list[type]:
    found: dict[str, type] = {}
    for module in app_modules():
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__.startswith("toolcalling."):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return list(found.values())


@functools.cache
def class_tree(cls: type) -> ast.ClassDef | None:
    """The class's own source as a tree; ``None`` for a class outside the app (its methods are found with
    ``hasattr``) or one without source."""
    if not cls.__module__.startswith("toolcalling."):
        return None
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return None
    node = ast.parse(source).body[0]
    return node if isinstance(node, ast.ClassDef) else None


def called_on_self(tree: ast.ClassDef) -> set[str]:
    return {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    }


def assigned_on_self(tree: ast.ClassDef) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                names.add(target.attr)
    return names


def stubs(tree: ast.ClassDef) -> list[str]:
    """The methods whose body (after a docstring) only raises ``NotImplementedError``."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Raise) and "NotImplementedError" in ast.unparse(body[0]):
                found.append(node.name)
    return found


def heirs(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from heirs(sub)


def test_no_class_calls_a_method_only_an_heir_defines():
    classes = app_classes()
    assert len(classes) > 150  # the whole app was read
    calling_back = {}
    for cls in classes:
        tree = class_tree(cls)
        if tree is None:
            continue
        assigned = set().union(*(assigned_on_self(t) for k in cls.__mro__ if (t := class_tree(k)) is not None))
        if dataclasses.is_dataclass(cls):
            assigned |= {f.name for f in dataclasses.fields(cls)}
        missing = sorted(name for name in called_on_self(tree) if not hasattr(cls, name) and name not in assigned)
        if missing:
            calling_back[f"{cls.__module__}.{cls.__qualname__}"] = missing
    assert calling_back == {}


def test_no_heir_in_another_module_fills_in_a_stub():
    filled_elsewhere = {}
    for cls in app_classes():
        tree = class_tree(cls)
        if tree is None or not stubs(tree):
            continue
        elsewhere = sorted(
            {h.__module__ for h in heirs(cls) if h.__module__.startswith("toolcalling.")} - {cls.__module__}
        )
        if elsewhere:
            filled_elsewhere[f"{cls.__module__}.{cls.__qualname__}"] = elsewhere
    assert filled_elsewhere == {}


def sibling_cycles(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """The circles between the children of ``package`` (each child with everything under it)."""
    children = sorted(graph.find_children(package))
    inside = {
        child: {child, *graph.find_descendants(child)} if child in graph.modules else {child} for child in children
    }
    edges: dict[str, set[str]] = {child: set() for child in children}
    for child, modules in inside.items():
        for module in modules:
            for imported in graph.find_modules_directly_imported_by(module):
                for other, others in inside.items():
                    if other != child and imported in others:
                        edges[child].add(other)
    return strongly_connected(edges)


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: the groups of more than one node that reach each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in edges:
        if node not in index:
            visit(node)
    return groups


def test_strongly_connected_finds_a_circle_and_nothing_else():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(edges) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


@functools.cache
def import_graph() -> grimp.ImportGraph:
    return grimp.build_graph("toolcalling", exclude_type_checking_imports=False, cache_dir=None)


def test_no_import_circle_between_the_modules_of_a_package_even_for_type_checking():
    graph = import_graph()
    packages = sorted({m.rpartition(".")[0] for m in graph.modules if m.count(".") >= 1})
    assert "toolcalling.engine" in packages and "toolcalling.admin" in packages
    circles = {package: cycles for package in packages if (cycles := sibling_cycles(graph, package))}
    assert circles == {}


def test_no_edge_package_imports_another():
    graph = import_graph()
    crossing = sorted(
        f"{importer} -> {imported}"
        for edge in EDGES
        for other in EDGES
        if other != edge
        for importer in {edge, *graph.find_descendants(edge)}
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported == other or imported.startswith(other + ".")
    )
    assert crossing == []


def test_a_module_over_the_soft_limit_is_named_in_a_warning():
    modules = [path for path in PACKAGE.rglob("*.py") if "migrations" not in path.relative_to(PACKAGE).parts]
    lengths = {str(path.relative_to(PACKAGE)): len(path.read_text().splitlines()) for path in modules}
    assert len(lengths) > 100  # the whole package was read
    for name, lines in sorted(lengths.items()):
        if lines > SOFT_LIMIT:
            warnings.warn(f"toolcalling/{name} has {lines} lines: is it still one concept?", stacklevel=1)
