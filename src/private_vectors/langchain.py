"""LangChain names where users look for them: ``from private_vectors.langchain import Chroma, FAISS``.

Re-exports :mod:`private_vectors.integrations.langchain` (lazily importable from
:mod:`private_vectors` too: ``from private_vectors import Chroma``).
"""

from __future__ import annotations

from typing import Any

from .integrations.langchain import Chroma, chroma_store, stored_texts

__all__ = ["FAISS", "Chroma", "chroma_store", "stored_texts"]  # noqa: F822 (FAISS: lazy, module __getattr__)


def __getattr__(name: str) -> Any:
    """``FAISS`` on first use (langchain_community and faiss are imported only when asked for)."""
    if name == "FAISS":
        from .integrations.langchain_faiss import FAISS

        return FAISS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
