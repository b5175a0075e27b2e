"""No import cycle among ``private_vectors`` modules (issue 15: the layout stays as drawn).

The test parses every module of the package with :mod:`ast` (nothing is imported) and builds
the graph of imports between ``private_vectors`` modules; a package counts as its
``__init__`` module.

What counts as an edge (the choice this test makes):

* **every** ``import`` / ``from ... import`` statement, wherever it sits: module level,
  inside ``try``/``if`` blocks, and inside functions and methods. A function-level import is
  still a dependency; importing lazily is the usual way a cycle gets hidden rather than
  removed, so it does not excuse one.
* importing ``a.b.c`` also depends on the packages ``a.b`` and ``a`` (Python runs their
  ``__init__`` first), except for packages that already enclose the importing module.
  An explicitly named target always counts (``from . import __version__`` inside
  ``private_vectors.embedding`` is an edge to ``private_vectors``).
* ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``.

Imports under ``if TYPE_CHECKING:`` count too: a type-only import is still a dependency of
the code that names the type, and a cycle closed through one is a cycle a reader has to hold.
A type shared by both sides belongs in the lower module (or is a protocol of the caller's).

No exception remains: the package's lazy attributes (a ``__getattr__`` per PEP 562) import
through :func:`importlib.import_module`, which names no module this scan could follow, and the
old-path shims that once sat in such functions are gone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "src" / "private_vectors"
PACKAGE = "private_vectors"


def _module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _import_nodes(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, wherever it sits (``TYPE_CHECKING`` blocks included)."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _edges(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    own_ancestors = {*_ancestors(name), name}
    out: set[str] = set()

    def add(target: str) -> None:
        if target == name or target not in modules:
            return
        out.add(target)  # the named target always counts
        out.update(a for a in _ancestors(target) if a not in own_ancestors and a in modules)

    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
            continue
        if node.level:
            base_parts = name.split(".") if is_pkg else name.split(".")[:-1]
            base_parts = base_parts[: len(base_parts) - (node.level - 1)]
            base = ".".join(base_parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        if not base.startswith(PACKAGE):
            continue
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            add(sub if sub in modules else base)
    return out


def import_graph() -> dict[str, set[str]]:
    """``{module: {private_vectors modules it imports}}`` for the whole package."""
    modules = _modules()
    return {name: _edges(name, path, modules) for name, path in modules.items()}


def tangles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def strongconnect(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return sorted(components)


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One concrete cycle per tangle (empty when the graph has no cycle)."""
    return [_witness(comp, graph) for comp in tangles(graph)]


def _witness(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One concrete cycle inside a strongly connected component (for the failure message)."""
    members = set(component)
    start = component[0]
    path, seen = [start], {start}
    while True:
        nxt = sorted(graph[path[-1]] & members)
        back = [w for w in nxt if w in seen]
        if back:
            return [*path[path.index(back[0]):], back[0]]
        fresh = [w for w in nxt if w not in seen]
        path.append(fresh[0])
        seen.add(fresh[0])


def test_graph_sees_the_package() -> None:
    graph = import_graph()
    assert "private_vectors.embedding" in graph
    assert "private_vectors.errors" in graph["private_vectors.embedding"]


def test_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_type_only_imports_count() -> None:
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import X\n")
    assert [n.module for n in _import_nodes(tree)] == ["typing", "b"]


def test_no_import_cycles() -> None:
    graph = import_graph()
    cycles = find_cycles(graph)
    if cycles:
        lines = []
        for comp, cycle in zip(tangles(graph), cycles, strict=True):
            lines.append("  cycle: " + " -> ".join(cycle))
            lines.extend(f"      {m} imports {sorted(graph[m] & set(comp))}" for m in comp)
        pytest.fail("import cycles among private_vectors modules:\n" + "\n".join(lines))
