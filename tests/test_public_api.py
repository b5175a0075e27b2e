"""A snapshot of the public API (names and signatures), so that a move or a rename is deliberate.

Every public module (no path part starting with ``_``, not an old path kept for one release)
lists its ``__all__``; each function is written with its signature, each class with its public
methods and properties. ``tests/data/public_api.txt`` holds the committed snapshot. After a
deliberate change of the API, rewrite it and commit it with the change::

    .venv/bin/python tests/test_public_api.py --write
"""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings
from pathlib import Path

SNAPSHOT = Path(__file__).resolve().parent / "data" / "public_api.txt"
DEPRECATED = ("private_vectors.bench", "private_vectors.attacks", "private_vectors.datasets",
              "private_vectors.metrics", "private_vectors.synthetic", "private_vectors.concepts")
"""Old paths kept for one release (tests/test_layering.py checks them)."""


def public_modules() -> list[str]:
    """Every public module, from the package's files (importing the old paths would alias them)."""
    import private_vectors

    root = Path(private_vectors.__file__).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = ["private_vectors", *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        if any(p.startswith("_") for p in parts) or name.startswith(DEPRECATED):
            continue
        names.append(name)
    return sorted(names)


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


def describe(module_name: str) -> list[str]:
    """The module's public names, one line each (classes with their members)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = importlib.import_module(module_name)
        lines = [f"[{module_name}]"]
        for name in sorted(getattr(module, "__all__", ())):
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
    for name in public_modules():
        try:
            lines += describe(name)
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
