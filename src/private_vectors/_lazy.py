"""Import-time helpers that keep ``import private_vectors`` and ``private-vectors --help`` quick.

* :func:`lazy_attributes` gives a package PEP 562 ``__getattr__`` / ``__dir__`` functions, so
  its public names are imported from their submodules on first use instead of at package
  import (PEP 562, https://peps.python.org/pep-0562/).
* :func:`after_import` runs a callback once some modules have finished importing (a one-shot
  :data:`sys.meta_path` finder that wraps the modules' loaders; the import system's protocol is
  https://docs.python.org/3/reference/import.html#the-meta-path). The package uses it to
  register its embedding function with Chroma when, and only when, chromadb is imported.

* :func:`moved` keeps a module's old import path working after a move, for one release, with a
  :class:`DeprecationWarning` (``private_vectors.bench`` → ``private_vectors.eval``).

* :func:`import_presidio_analyzer` imports presidio's analyzer without importing ``transformers``
  (presidio imports it at import time for its optional Hugging Face engine and recognizer, which
  the text stage does not use; about two seconds of CPU).

Standard library only: this module is imported by the package's ``__init__``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

__all__ = ["after_import", "import_presidio_analyzer", "is_initializing", "lazy_attributes", "moved"]


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


# presidio-analyzer modules that bind ``transformers.pipeline`` at import time, as ``hf_pipeline``
_PRESIDIO_HF = ("presidio_analyzer.nlp_engine.huggingface_token_pipe",
                "presidio_analyzer.predefined_recognizers.ner.huggingface_ner_recognizer")
_PRESIDIO_LOCK = threading.Lock()


def _hf_pipeline(*args: Any, **kwargs: Any) -> Any:
    """``transformers.pipeline``, imported on first call (stands in for presidio's ``hf_pipeline``)."""
    from transformers import pipeline

    return pipeline(*args, **kwargs)


def import_presidio_analyzer() -> ModuleType:
    """Import ``presidio_analyzer`` without importing ``transformers``; returns the module.

    While presidio is imported, ``transformers`` is hidden (``sys.modules["transformers"] = None``,
    the import system's "not importable" marker), so presidio's optional imports of it fail
    quietly; then the marker is removed and presidio's ``hf_pipeline`` names become a function
    that imports ``transformers.pipeline`` on first call, so presidio's Hugging Face engine and
    recognizer still work when asked for. Without transformers installed, or with it already
    imported, this is a plain import. (Another thread importing transformers during that
    window would see an ImportError; the text stage runs this once, before its first detection.)
    """
    with _PRESIDIO_LOCK:
        if "presidio_analyzer" in sys.modules or "transformers" in sys.modules:
            return importlib.import_module("presidio_analyzer")
        if importlib.util.find_spec("transformers") is None:
            return importlib.import_module("presidio_analyzer")
        sys.modules["transformers"] = None  # type: ignore[assignment]
        try:
            module = importlib.import_module("presidio_analyzer")
            importlib.import_module(_PRESIDIO_HF[1])
        finally:
            if sys.modules.get("transformers", 0) is None:
                del sys.modules["transformers"]
        for name in _PRESIDIO_HF:
            sub = sys.modules.get(name)
            if sub is not None and getattr(sub, "hf_pipeline", 0) is None:
                sub.hf_pipeline = _hf_pipeline  # type: ignore[attr-defined]
        return module
