"""The store protocols ``PrivateEmbedding`` subclasses when their packages are installed:
Chroma's ``EmbeddingFunction`` and LangChain's ``Embeddings`` (both optional dependencies)."""

from __future__ import annotations

try:  # optional integrations: subclass their protocols when installed
    from chromadb.api.types import Documents as _Documents
    from chromadb.api.types import EmbeddingFunction as _ChromaEF

    _CHROMA_BASES: tuple[type, ...] = (_ChromaEF[_Documents],)
except Exception:  # pragma: no cover - chromadb not installed
    _CHROMA_BASES = ()
try:
    from langchain_core.embeddings import Embeddings as _LCEmbeddings

    _LC_BASES: tuple[type, ...] = (_LCEmbeddings,)
except Exception:  # pragma: no cover - langchain not installed
    _LC_BASES = ()
