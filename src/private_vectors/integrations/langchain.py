"""LangChain integration.

``PrivateEmbedding`` is a ``langchain_core.embeddings.Embeddings`` (``embed_documents``,
``embed_query``, ``aembed_documents``, ``aembed_query``; each call, sync or async, draws its
own random stream), so it plugs into any LangChain vector store::

    from langchain_chroma import Chroma
    store = Chroma(embedding_function=PrivateEmbedding(concept="PII", eps=10))

LangChain's Chroma wrapper creates collections with Chroma's default space (L2) and without an
embedding-function config, so neither the measured best space for perturbed documents nor the
drift check applies. :func:`chroma_store` builds the same ``langchain_chroma.Chroma`` with the
collection space of the PrivateEmbedding and its config persisted in the collection, and refuses
to reopen a collection written by a different PrivateEmbedding.
"""

from __future__ import annotations

from typing import Any

from ..embedding import PrivateEmbedding
from ..errors import InvalidTypeError, ModelNotAvailableError
from .chroma import check_collection

__all__ = ["chroma_store"]


def chroma_store(embedding: PrivateEmbedding, *, collection_name: str = "langchain", **kwargs: Any) -> Any:
    """A ``langchain_chroma.Chroma`` store over a collection that records ``embedding``.

    Args:
        embedding: the PrivateEmbedding.
        collection_name: the Chroma collection.
        **kwargs: passed to ``langchain_chroma.Chroma`` (``persist_directory``, ``client``, ``host``…).

    Raises:
        ConfigMismatchError: the collection exists and was written by another PrivateEmbedding.
    """
    if not isinstance(embedding, PrivateEmbedding):
        raise InvalidTypeError("embedding", "a PrivateEmbedding", embedding)
    try:
        from langchain_chroma import Chroma
    except ImportError as exc:  # pragma: no cover
        raise ModelNotAvailableError("langchain-chroma is not installed: pip install 'private-vectors[langchain]'") \
            from exc
    configuration: Any = dict(kwargs.pop("collection_configuration", None) or {})
    configuration.setdefault("hnsw", {"space": embedding.space})
    configuration.setdefault("embedding_function", embedding)
    store = Chroma(collection_name=collection_name, embedding_function=embedding,
                   collection_configuration=configuration, **kwargs)
    check_collection(store._collection, embedding)
    return store
