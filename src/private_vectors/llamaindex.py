"""LlamaIndex names where users look for them: ``from private_vectors.llamaindex import SanitizeNodes``.

Re-exports :mod:`private_vectors.integrations.llamaindex` (needs ``llama-index-core``:
``pip install 'private-vectors[llamaindex]'``).
"""

from __future__ import annotations

from .integrations.llamaindex import (
    MARKER,
    PrivateIngestionPipeline,
    PrivateLlamaEmbedding,
    SanitizeNodes,
    chroma_vector_store,
    index_from_collection,
    load_index,
    persist_index,
    protect_documents,
)
from .integrations.llamaindex_sealed import SealedRetriever, delete_ref_doc, open_nodes

__all__ = ["MARKER", "PrivateIngestionPipeline", "PrivateLlamaEmbedding", "SanitizeNodes", "SealedRetriever",
           "chroma_vector_store", "delete_ref_doc", "index_from_collection", "load_index", "open_nodes",
           "persist_index", "protect_documents"]
