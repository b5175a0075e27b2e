"""Moved to :mod:`private_vectors.mechanisms.textcrafter` (it perturbs vectors: a mechanism, not an encoder).

This old path keeps working: every name is looked up in the new module on first use.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    from ..mechanisms import textcrafter

    return getattr(textcrafter, name)
