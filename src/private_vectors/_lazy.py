"""Import-time helpers that keep ``import private_vectors`` and ``private-vectors --help`` quick.

* :func:`lazy_attributes` gives a package PEP 562 ``__getattr__`` / ``__dir__`` functions, so
  its public names are imported from their submodules on first use instead of at package
  import (PEP 562, https://peps.python.org/pep-0562/).
* :func:`after_import` runs a callback once some modules have finished importing (a one-shot
  :data:`sys.meta_path` finder that wraps the modules' loaders; the import system's protocol is
  https://docs.python.org/3/reference/import.html#the-meta-path). The package uses it to
  register its embedding function with Chroma when, and only when, chromadb is imported.

Standard library only: this module is imported by the package's ``__init__``.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

__all__ = ["after_import", "is_initializing", "lazy_attributes"]


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


def is_initializing(name: str) -> bool:
    """Whether module ``name`` is being imported right now (in ``sys.modules``, not finished)."""
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    return module is not None and bool(getattr(spec, "_initializing", False))


def _loaded(name: str) -> bool:
    return name in sys.modules and not is_initializing(name)


class _AfterImport:
    """A :data:`sys.meta_path` finder (duck-typed: ``importlib.abc`` costs more to import than
    this whole module) that wraps the loaders of ``watched`` modules so that ``attempt`` runs
    after each finishes; removes itself once ``attempt`` returns True."""

    def __init__(self, watched: Iterable[str], attempt: Callable[[], bool]) -> None:
        self._watched = set(watched)
        self._attempt = attempt
        self._lock = threading.Lock()

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        with self._lock:
            if fullname not in self._watched:
                return None
            self._watched.discard(fullname)
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                self._wrap(spec)
                return spec
        return None

    def _wrap(self, spec: Any) -> None:
        loader = spec.loader
        original = getattr(loader, "exec_module", None)
        if original is None:
            return

        def exec_module(module: ModuleType) -> None:
            original(module)
            self._run_after(module.__name__)

        loader.exec_module = exec_module  # this loader instance serves this one module

    def _run_after(self, name: str) -> None:
        # the module's own import finishes after exec_module returns: mark it done first
        spec = getattr(sys.modules.get(name), "__spec__", None)
        if spec is not None:
            spec._initializing = False
        if self._attempt():
            self.remove()

    def remove(self) -> None:
        """Take this finder off :data:`sys.meta_path` (idempotent)."""
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)


def after_import(trigger: str, waits_for: Iterable[str], callback: Callable[[], None]) -> None:
    """Run ``callback`` once ``trigger`` is imported and none of ``waits_for`` is mid-import.

    Runs it now when ``trigger`` is already imported; otherwise when ``trigger`` (or, if one
    of ``waits_for`` was still importing then, the last of those) finishes importing. The
    callback runs at most once per call. It may import ``waits_for`` modules itself.
    A callback that fails gives a :class:`RuntimeWarning` (the import that triggered it still
    succeeds).

    Args:
        trigger: the module whose import should trigger ``callback`` (``"chromadb"``).
        waits_for: modules the callback imports; it never runs while one is half imported.
        callback: what to run.
    """
    waits = tuple(waits_for)
    done = threading.Event()

    def attempt() -> bool:
        if done.is_set():
            return True
        if not _loaded(trigger) or any(is_initializing(m) for m in waits):
            return False
        done.set()
        try:
            callback()
        except Exception as exc:  # pragma: no cover - a broken optional integration
            warnings.warn(f"private_vectors: running {getattr(callback, '__name__', callback)!r} after "
                          f"{trigger!r} was imported failed: {exc!r}", RuntimeWarning, stacklevel=2)
        return True

    if attempt():
        return
    sys.meta_path.insert(0, _AfterImport({trigger, *waits}, attempt))
