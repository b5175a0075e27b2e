"""Import-time helpers that keep ``import private_vectors`` and ``private-vectors --help`` quick.

* :func:`lazy_attributes` gives a package PEP 562 ``__getattr__`` / ``__dir__`` functions, so
  its public names are imported from their submodules on first use instead of at package
  import (PEP 562, https://peps.python.org/pep-0562/).
* :func:`moved` keeps a module's old import path working after a move, for one release, with a
  :class:`DeprecationWarning` (``private_vectors.bench`` → ``private_vectors.eval``).

Standard library only: this module is imported by the package's ``__init__``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

__all__ = ["lazy_attributes", "moved"]


def lazy_attributes(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """PEP 562 ``__getattr__`` and ``__dir__`` for ``package``.

    Args:
        package: the package's ``__name__``.
        names: public name → the module that defines it, relative to ``package`` (``".embedding"``).

    Returns:
        ``(__getattr__, __dir__)`` to assign at the package's module level. A name is imported
        on first access and then cached on the package (later lookups cost nothing).
    """

    def __getattr__(name: str) -> Any:  # noqa: N807 (the PEP 562 name)
        try:
            where = names[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(where, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__


class _MovedPackage:
    """A :data:`sys.meta_path` finder and loader that serves ``old.x.y`` as the already-moved
    module ``new.x.y`` (the same module object, so patches and ``isinstance`` agree).

    Installed by :func:`moved` only when an old package path is imported, and kept for the
    process: a later ``import old.x`` must find the same module as the first one did
    (``tests/test_layering.py`` imports old and new paths and compares them)."""

    def __init__(self, old: str, new: str, renamed: Mapping[str, str]) -> None:
        self._old, self._new, self._renamed = old, new, dict(renamed)
        self._specs: dict[str, Any] = {}

    def _target(self, fullname: str) -> str | None:
        if not fullname.startswith(self._old + "."):
            return None
        head, dot, tail = fullname[len(self._old) + 1:].partition(".")
        return f"{self._new}.{self._renamed.get(head, head)}{dot}{tail}"

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        new = self._target(fullname)
        if new is None or importlib.util.find_spec(new) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)  # type: ignore[arg-type]  # a duck-typed loader

    def create_module(self, spec: Any) -> ModuleType:
        module = importlib.import_module(self._target(spec.name) or spec.name)
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the import system set the alias spec on the (already executed) module: put its own back
        module.__spec__ = self._specs.pop(module.__name__, module.__spec__)

    def get_code(self, fullname: str) -> Any:
        """The moved module's code (``python -m old.x`` runs it)."""
        spec = importlib.util.find_spec(self._target(fullname) or fullname)
        get_code = getattr(spec.loader, "get_code", None) if spec is not None else None
        return get_code(spec.name) if get_code is not None and spec is not None else None


def moved(old: str, new: str, *, renamed: Mapping[str, str] | None = None, until: str = "0.3.0") -> None:
    """Call from module ``old``'s body: it becomes module ``new`` (moved there), with a
    :class:`DeprecationWarning`; for a package, ``old.x`` becomes ``new.x`` too.

    Args:
        old: the old module's ``__name__``.
        new: where it lives now.
        renamed: submodules of a package renamed in the move (``{"text": "removal"}``).
        until: the release that drops the old path.
    """
    warnings.warn(f"{old} moved to {new}; the old name works until private-vectors {until}",
                  DeprecationWarning, stacklevel=3)
    module = importlib.import_module(new)
    sys.modules[old] = module  # the import system hands this object to the importer
    if hasattr(module, "__path__"):
        sys.meta_path.insert(0, _MovedPackage(old, new, renamed or {}))
