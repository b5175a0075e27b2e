"""Import-time helpers that keep ``import private_vectors`` and ``private-vectors --help`` quick.

* :func:`lazy_attributes` gives a package PEP 562 ``__getattr__`` / ``__dir__`` functions, so
  its public names are imported from their submodules on first use instead of at package
  import (PEP 562, https://peps.python.org/pep-0562/).

Standard library only: this module is imported by the package's ``__init__``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


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
