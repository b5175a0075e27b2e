"""LangChain names where users look for them: ``from private_vectors.langchain import Chroma``.

Re-exports :mod:`private_vectors.integrations.langchain` (lazily importable from
:mod:`private_vectors` too: ``from private_vectors import Chroma``).
"""

from __future__ import annotations

from .integrations.langchain import Chroma, chroma_store, stored_texts

__all__ = ["Chroma", "chroma_store", "stored_texts"]
