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

Stored text: LangChain's own ``Chroma.add_texts`` stores the texts it is given (raw). The store
:func:`chroma_store` returns sanitizes each text once and stores that sanitized text (see there).
Plain ``Chroma(embedding_function=PrivateEmbedding(...))`` protects the vectors and the queries,
not the stored documents.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from ..embedding import PrivateEmbedding
from ..errors import InvalidParameterError, InvalidTypeError, ModelNotAvailableError
from .chroma import check_collection, load_query_index, save_query_index

__all__ = ["chroma_store"]


def chroma_store(embedding: PrivateEmbedding, *, collection_name: str = "langchain", store_raw_text: bool = False,
                 **kwargs: Any) -> Any:
    """A ``langchain_chroma.Chroma`` store over a collection that records ``embedding``.

    Texts added through the store (``add_texts``, ``add_documents``) go through the text stage
    **once**: the sanitized text is what is embedded and what the collection stores as the
    document. Without a text stage no document text is stored (an empty string, so LangChain
    still returns the hit with its id and metadata) unless ``store_raw_text=True``.

    Args:
        embedding: the PrivateEmbedding.
        collection_name: the Chroma collection.
        store_raw_text: keep the raw texts in the collection (a stolen store then holds them).
        **kwargs: passed to ``langchain_chroma.Chroma`` (``persist_directory``, ``client``, ``host``…).

    Raises:
        ConfigMismatchError: the collection exists and was written by another PrivateEmbedding.
    """
    if not isinstance(embedding, PrivateEmbedding):
        raise InvalidTypeError("embedding", "a PrivateEmbedding", embedding)
    if not isinstance(store_raw_text, bool):
        raise InvalidTypeError("store_raw_text", "True or False", store_raw_text)
    try:
        from langchain_chroma import Chroma
    except ImportError as exc:  # pragma: no cover
        raise ModelNotAvailableError("langchain-chroma is not installed: pip install 'private-vectors[langchain]'") \
            from exc
    configuration: Any = dict(kwargs.pop("collection_configuration", None) or {})
    configuration.setdefault("hnsw", {"space": embedding.space})
    configuration.setdefault("embedding_function", embedding)
    store = _private_chroma_class(Chroma)(collection_name=collection_name, embedding_function=embedding,
                                          collection_configuration=configuration, **kwargs)
    store.store_raw_text = store_raw_text
    check_collection(store._collection, embedding)
    load_query_index(store._collection, embedding)
    return store


_CLASSES: dict[type, type] = {}


def _private_chroma_class(base: type) -> type:
    """``base`` (langchain_chroma.Chroma) with a one-pass ``add_texts`` (built once, lazily)."""
    if base in _CLASSES:
        return _CLASSES[base]

    class PrivateChroma(base):
        """``langchain_chroma.Chroma`` that stores the sanitized text (see :func:`chroma_store`)."""

        store_raw_text: bool = False

        def add_texts(self, texts: Iterable[str], metadatas: list[dict] | None = None,
                      ids: list[str] | None = None, **kwargs: Any) -> list[str]:
            texts = list(texts)
            ef: PrivateEmbedding = self._embedding_function
            stored, vectors = ef.prepare_documents(texts, store_raw_text=self.store_raw_text)
            documents = stored if stored is not None else [""] * len(texts)
            ids = [str(uuid.uuid4()) if i is None else i for i in ids] if ids is not None else [
                str(uuid.uuid4()) for _ in texts]
            if len(ids) != len(texts):
                raise InvalidParameterError("ids", f"{len(texts)} ids (one per text)", ids)
            metas: list[Any] | None = None
            if metadatas:
                metas = [m or None for m in [*metadatas, *[{}] * (len(texts) - len(metadatas))]]
            self._collection.upsert(ids=ids, embeddings=vectors, documents=documents,
                                    metadatas=metas)
            save_query_index(self._collection, ef)
            return ids

    _CLASSES[base] = PrivateChroma
    return PrivateChroma
