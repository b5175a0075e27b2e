"""The protocol base ``PrivateEmbedding`` subclasses when its package is installed: LangChain's
``Embeddings`` (an ABC; importing it is cheap). Chroma's ``EmbeddingFunction`` is a protocol
Chroma checks by the ``__call__(self, input)`` signature, so ``PrivateEmbedding`` implements it
without importing chromadb (about a second of start-up); registration under Chroma's name runs
when the library's Chroma integration is imported (``private_vectors.integrations.chroma``)."""

from __future__ import annotations

__all__ = ["LANGCHAIN_BASES"]

try:
    from langchain_core.embeddings import Embeddings as _LCEmbeddings

    LANGCHAIN_BASES: tuple[type, ...] = (_LCEmbeddings,)
except Exception:  # pragma: no cover - langchain not installed
    LANGCHAIN_BASES = ()
