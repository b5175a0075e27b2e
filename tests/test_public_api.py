"""A snapshot of the public API (names and signatures), so that a move or a rename is deliberate.

The public API is what the documentation names: the targets of the API reference pages
(``docs/api/*.md``: ``::: module`` for its ``__all__``, ``::: module.Object`` for one object,
``members: [...]`` for those members), every module the README and the guides import from, and
the package itself. Every other module is internal and may change without notice
(docs/architecture.md). Each function is written with its signature, each class with its public
methods and properties. ``tests/data/public_api.txt`` holds the committed snapshot. After a
deliberate change of the API, rewrite it and commit it with the change::

    .venv/bin/python tests/test_public_api.py --write
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = Path(__file__).resolve().parent / "data" / "public_api.txt"
_DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$")
_MEMBERS = re.compile(r"^\s+members:\s*\[([^\]]*)\]")
_IMPORT = re.compile(r"^\s*(?:from (private_vectors[\w.]*) import|import (private_vectors[\w.]*))", re.M)


def _is_module(target: str) -> bool:
    try:
        return importlib.util.find_spec(target) is not None
    except ModuleNotFoundError:
        return False


def _add(out: dict[str, set[str] | None], module: str, names: set[str] | None) -> None:
    if names is None or out.get(module, set()) is None:
        out[module] = None
    else:
        out.setdefault(module, set()).update(names)  # type: ignore[union-attr]


def documented() -> dict[str, set[str] | None]:
    """Module → the names the docs name (None: its whole ``__all__``)."""
    out: dict[str, set[str] | None] = {"private_vectors": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for page in sorted((ROOT / "docs" / "api").glob("*.md")):
            lines = page.read_text(encoding="utf-8").splitlines()
            for i, line in enumerate(lines):
                if not (m := _DIRECTIVE.match(line)):
                    continue
                target = m.group(1)
                members = next((mm for ln in lines[i + 1:i + 6] if (mm := _MEMBERS.match(ln))), None)
                if _is_module(target):
                    _add(out, target, None if members is None else
                         {n.strip() for n in members.group(1).split(",") if n.strip()})
                else:
                    module, name = target.rsplit(".", 1)
                    _add(out, module, {name})
        for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
            for m in _IMPORT.finditer(page.read_text(encoding="utf-8")):
                _add(out, m.group(1) or m.group(2), None)
    return dict(sorted(out.items()))


def _signature(obj: object) -> str:
    try:
        return str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"


def _describe_class(name: str, cls: type) -> list[str]:
    lines = [f"class {name}{_signature(cls)}"]
    for attr, value in sorted(vars(cls).items()):
        if attr.startswith("_"):
            continue
        if isinstance(value, property):
            lines.append(f"    {attr}: property")
        elif isinstance(value, (staticmethod, classmethod)):
            lines.append(f"    {attr}{_signature(value.__func__)}  [{type(value).__name__}]")
        elif inspect.isfunction(value):
            lines.append(f"    {attr}{_signature(value)}")
    return lines


def describe(module_name: str, names: set[str] | None = None) -> list[str]:
    """The module's documented names (default: its ``__all__``), one line each (classes with their members)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = importlib.import_module(module_name)
        lines = [f"[{module_name}]"]
        for name in sorted(getattr(module, "__all__", ()) if names is None else names):
            obj = getattr(module, name)
            if inspect.isclass(obj):
                lines += _describe_class(name, obj)
            elif callable(obj):
                lines.append(f"def {name}{_signature(obj)}")
            else:
                lines.append(f"{name}: {type(obj).__name__}")
    return lines


def snapshot() -> tuple[str, list[str]]:
    """(the snapshot text, the public modules that could not be imported here)."""
    lines: list[str] = []
    missing = []
    for name, names in documented().items():
        try:
            lines += describe(name, names)
        except ImportError:  # an optional dependency that is not installed
            missing.append(name)
    return "\n".join(lines) + "\n", missing


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            out[current] = []
        else:
            out.setdefault(current, []).append(line)
    return out


def test_the_public_api_matches_the_snapshot() -> None:
    got, missing = snapshot()
    want = _sections(SNAPSHOT.read_text(encoding="utf-8"))
    have = _sections(got)
    changed = sorted(m for m in set(want) | set(have) if m not in missing and want.get(m) != have.get(m))
    details = []
    for m in changed[:5]:
        gone = [x for x in want.get(m, []) if x not in have.get(m, [])]
        new = [x for x in have.get(m, []) if x not in want.get(m, [])]
        details.append(f"{m}: removed {gone[:5]}, added {new[:5]}")
    assert not changed, ("the public API changed (if deliberate: .venv/bin/python tests/test_public_api.py --write "
                         "and commit tests/data/public_api.txt):\n" + "\n".join(details))


def test_the_snapshot_sees_the_main_names() -> None:
    text = SNAPSHOT.read_text(encoding="utf-8")
    assert "class PrivateEmbedding(*, concept" in text and "[private_vectors.eval]" in text
    assert "def open_collection(client" in text and "[private_vectors.fitted]" in text


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/test_public_api.py --write")
    text, unavailable = snapshot()
    if unavailable:
        raise SystemExit(f"cannot snapshot without these modules' dependencies: {unavailable}")
    SNAPSHOT.write_text(text, encoding="utf-8")
    print(f"{SNAPSHOT}: {len(text.splitlines())} lines")
