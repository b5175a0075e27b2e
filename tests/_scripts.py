"""Load a script of the repository (``benchmarks/*.py``, ``scripts/*.py``) as a module for a test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str, name: str) -> ModuleType:
    """The module of ``ROOT / relative``, registered as ``name`` (its dataclasses need that).

    The script's folder goes on the import path, as when Python runs the script (a benchmark
    imports its helper module ``_shared`` from there)."""
    folder = str((ROOT / relative).parent)
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    assert spec is not None and spec.loader is not None, relative
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
