"""LangChain names where users look for them: ``from private_vectors.langchain import Chroma, FAISS``.

Re-exports :mod:`private_vectors.integrations.langchain` (lazily importable from
:mod:`private_vectors` too: ``from private_vectors import Chroma``), the FAISS drop-in and the
drop-ins of :mod:`private_vectors.integrations.langchain_records` (``CacheBackedEmbeddings``,
``index``, ``aindex``, ``ParentDocumentRetriever``), each imported on first use.
"""

from __future__ import annotations

from typing import Any

from .integrations.langchain import Chroma, chroma_store, stored_texts

__all__ = ["FAISS", "CacheBackedEmbeddings", "Chroma", "ParentDocumentRetriever",  # noqa: F822 (lazy names)
           "aindex", "chroma_store", "index", "stored_texts"]

_RECORDS = frozenset({"CacheBackedEmbeddings", "ParentDocumentRetriever", "aindex", "index"})


def __getattr__(name: str) -> Any:
    """``FAISS`` and the record drop-ins on first use (langchain_community, faiss and
    langchain_classic are imported only when asked for)."""
    if name == "FAISS":
        from .integrations.langchain_faiss import FAISS

        return FAISS
    if name in _RECORDS:
        from .integrations import langchain_records

        return getattr(langchain_records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
