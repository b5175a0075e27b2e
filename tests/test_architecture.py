"""docs/architecture.md describes the tree as it is: its table of top-level entries is the
folder's, its table of import layers is the one every import keeps to, and its table of
process-wide state names every piece the code holds (found on the syntax tree) and nothing the
code does not hold."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_import_cycles import import_graph

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "private_vectors"
PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
_STATEFUL = frozenset(["ContextVar", "Lock", "RLock", "WeakValueDictionary", "WeakKeyDictionary", "WeakSet", "local",
                       "Event", "Condition", "ThreadPoolExecutor"])
_CONTAINERS = (ast.Dict, ast.Set, ast.List)
_REGISTRATIONS = frozenset(["register_at_fork", "register_if_available"])


def _section(title: str) -> str:
    start = PAGE.index(f"## {title}\n")
    end = PAGE.find("\n## ", start + 1)
    return PAGE[start:end if end != -1 else len(PAGE)]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _call_name(node: ast.AST) -> str:
    return ast.unparse(node.func).split(".")[-1] if isinstance(node, ast.Call) else ""


def _mutated(name: str, source: str) -> bool:
    return re.search(re.escape(name) + r"(\[[^\]]*\]\s*=[^=]|\.(setdefault|add|update|append|pop|clear|discard)\()",
                     source) is not None


def _cached(fn: ast.FunctionDef) -> bool:
    return any(re.search(r"\b(cache|lru_cache)\b", ast.unparse(d)) for d in fn.decorator_list)


def _state_of(path: Path) -> set[str]:
    """The module-level state of one module: stateful objects, mutated private containers,
    names rebound through ``global``, cached functions, registrations run at import."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                name = ast.unparse(target)
                if _call_name(node.value) in _STATEFUL:
                    found.add(name)
                elif (name.startswith("_") and not name.startswith("__") and _mutated(name, source)
                      and (isinstance(node.value, _CONTAINERS) or _call_name(node.value) in ("dict", "set", "list"))):
                    found.add(name)
        elif isinstance(node, ast.FunctionDef) and _cached(node):
            found.add(node.name)
        elif isinstance(node, ast.Expr) and _call_name(node.value) in _REGISTRATIONS:
            found.add(_call_name(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.update(node.names)
    return found


def process_state() -> set[str]:
    """Every piece of process-wide state of the package (``module.name``, relative to it)."""
    return {f"{_module_name(p)}.{name}".lstrip(".") for p in sorted(PACKAGE.rglob("*.py")) for name in _state_of(p)}


def test_the_tree_table_lists_every_top_level_entry() -> None:
    entries = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("__")}
    rows = [line for line in _section("The tree").splitlines() if line.startswith("| `")]
    listed = {name for row in rows for name in re.findall(r"`([\w.]+)`", row.split(" | ")[0])}
    assert listed == entries, {"missing from the page": sorted(entries - listed), "not in the folder": sorted(listed - entries)}


def test_the_state_table_names_every_piece_of_process_state() -> None:
    table = _section("Process-wide state")
    named = set(re.findall(r"`((?:[a-z_]+\.)+[A-Za-z_]\w*)`", table))
    state = process_state()
    assert len(state) >= 20  # (the scan sees the package's state at all)
    missing = sorted(s for s in state if s not in named)
    assert not missing, f"process state not in docs/architecture.md's table: {missing}"


def test_the_state_table_names_nothing_the_code_does_not_hold() -> None:
    table = _section("Process-wide state")
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    named = {n for row in rows for n in re.findall(r"`((?:[a-z_]+\.)+[A-Za-z_]\w*)`", row.split(" | ")[0])}
    stale = []
    for name in sorted(named):
        module, attr = name.rsplit(".", 1)
        path = PACKAGE.joinpath(*module.split("."))
        source = (path / "__init__.py") if path.is_dir() else path.with_suffix(".py")
        if not source.is_file() or not re.search(rf"^(?:def |class )?{re.escape(attr)}\b|\b{re.escape(attr)}\(",
                                                 source.read_text(encoding="utf-8"), re.M):
            stale.append(name)
    assert not stale, f"named in the state table but not defined there: {stale}"


def _entry(module: str) -> str:
    """The top-level entry of a module (``private_vectors.text.spans`` -> ``text``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _layers() -> dict[str, int]:
    """Top-level entry -> its layer, read from the second column of the import-layer table."""
    out: dict[str, int] = {}
    for line in _section("Import layers").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and cells[0].isdigit():
            out.update({name: int(cells[0]) for name in re.findall(r"`([\w.]+)`", cells[1])})
    return out


def _climbs(graph: dict[str, set[str]], layers: dict[str, int]) -> list[str]:
    return sorted(f"{m} (layer {layers[_entry(m)]}) -> {d} (layer {layers[_entry(d)]})"
                  for m, targets in graph.items() for d in targets
                  if _entry(m) != _entry(d) and layers[_entry(m)] <= layers[_entry(d)])


def test_each_layer_imports_only_the_layers_below() -> None:
    """Every import between two top-level entries (``TYPE_CHECKING`` ones and those inside
    functions included: the graph of tests/test_import_cycles.py) goes down the table."""
    graph, layers = import_graph(), _layers()
    entries = {_entry(m) for m in graph}
    assert set(layers) == entries, {"missing from the table": sorted(entries - set(layers)),
                                    "not a module": sorted(set(layers) - entries)}
    climbs = _climbs(graph, layers)
    assert not climbs, "imports that do not go down docs/architecture.md's layer table:\n" + "\n".join(climbs)
    planted = {"private_vectors.text.x": {"private_vectors.options", "private_vectors.errors"},
               "private_vectors.fitted.y": {"private_vectors.mechanisms.z"}}
    assert _climbs(planted, layers) == ["private_vectors.text.x (layer 5) -> private_vectors.options (layer 6)"]
