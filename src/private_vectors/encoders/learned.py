"""Moved to :mod:`private_vectors.mechanisms.learned` (the learned perturbations' shared base)
and :mod:`private_vectors.mechanisms.factory` (``load_learned``).

This old path keeps working: every name is looked up in the new modules on first use.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    from ..mechanisms import factory, learned

    if name == "load_learned":
        return factory.load_learned
    return getattr(learned, name)
