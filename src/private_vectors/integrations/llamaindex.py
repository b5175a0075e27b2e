"""LlamaIndex integration: sanitize nodes before they are embedded and stored.

LlamaIndex's own PII postprocessors run *after* retrieval, so its stores (the docstore, the
default ``SimpleVectorStore``, Chroma through ``llama-index-vector-stores-chroma``) hold the raw
text. Two components put the text stage in front of the store instead:

- :class:`SanitizeNodes`, an ingestion ``TransformComponent``: each node's text and string
  metadata go through the PrivateEmbedding's text stage (once: a sanitized node is marked and
  never sanitized again), and the hashes LlamaIndex keeps of related nodes (an unkeyed SHA-256 of
  the raw text, which a dictionary reverses) are dropped. A node's own ``hash`` is recomputed
  by LlamaIndex from its (now sanitized) content.
- :class:`PrivateLlamaEmbedding`, a ``BaseEmbedding`` over the PrivateEmbedding: the text of a
  node :class:`SanitizeNodes` produced is embedded as it is (``embed_sanitized``: never
  sanitized twice); any other text is sanitized first, once, with a
  :class:`~private_vectors.errors.PrivacyWarning` (the store it is embedded for may keep it raw).
  Queries go through ``embed_query_array`` (the query side of the text stage). Used as a
  transformation it sanitizes the nodes it embeds, so the stored node is the embedded one.

The protected call::

    ef = PrivateEmbedding(concept="PII", eps=10)
    nodes = SanitizeNodes(embedding=ef)(SentenceSplitter()(documents))
    index = VectorStoreIndex(nodes, embed_model=PrivateLlamaEmbedding(embedding=ef))
    persist_index(index, "folder")                 # LlamaIndex's files + private_vectors.json
    index = load_index("folder", key=...)          # the stored PrivateEmbedding, checked key

With ``llama-index-vector-stores-chroma``, create the collection with
``private_vectors.chroma.create_collection(client, name, ef)`` (it records the configuration)
and hand it to :func:`chroma_vector_store` (LlamaIndex's ``ChromaVectorStore``, with the heap
bytes Chroma leaves in its index files zeroed after each write); reopen it with
``private_vectors.chroma.open_collection(client, name, key=...)`` (another configuration or key
is refused) and :func:`index_from_collection`.

LlamaIndex hashes and caches what it is *given*: ``VectorStoreIndex.from_documents`` records an
unkeyed SHA-256 of each input document in the docstore, an ``IngestionPipeline`` keys its cache by
a hash of each step's input nodes and stores each step's output there (``pipeline.persist()``
writes it to ``llama_cache``), and a pipeline with a docstore stores the input documents. So
protect the documents *before* LlamaIndex sees them:

- :class:`PrivateIngestionPipeline`, an ``IngestionPipeline`` that protects its inputs (documents,
  nodes, reader output) before it hashes, caches or stores anything;
- :func:`protect_documents` for ``from_documents`` and your own code: sanitized copies of the
  documents, whose ``hash`` (the key of LlamaIndex's de-duplication) is an HMAC of the raw
  document under a subkey of the key (:mod:`private_vectors.integrations._hashing`): stable
  across runs, so an unchanged document is skipped and a changed one replaced, yet no dictionary
  reverses it. Without a key the hash is LlamaIndex's own, over the sanitized document.

A plain ``IngestionPipeline`` with a cache (the default) or a docstore that reaches
:class:`SanitizeNodes` or :class:`PrivateLlamaEmbedding` with unsanitized nodes, and
``from_documents`` with unsanitized documents, warn once (a
:class:`~private_vectors.errors.PrivacyWarning`): the raw documents are then in the cache, the
docstore or its hashes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..embedding import PrivateEmbedding
from ..errors import ArtefactError, InvalidTypeError
from ._llamaindex_nodes import _FORMAT, CONFIG_FILE, MARKER, _check_embedding
from ._stored import stored_embedding
from .llamaindex_components import PrivateLlamaEmbedding, SanitizeNodes
from .llamaindex_pipeline import PrivateIngestionPipeline, protect_documents

__all__ = ["CONFIG_FILE", "MARKER", "PrivateIngestionPipeline", "PrivateLlamaEmbedding", "SanitizeNodes",
           "chroma_vector_store", "index_from_collection", "load_index", "persist_index", "protect_documents"]

# -- a persisted default index ----------------------------------------------------------------------
def persist_index(index: Any, folder: str | Path) -> Path:
    """``index.storage_context.persist(folder)`` plus ``private_vectors.json`` recording the
    index's PrivateEmbedding (its config and key check), which :func:`load_index` checks.

    Raises:
        InvalidTypeError: the index's ``embed_model`` is not a :class:`PrivateLlamaEmbedding`.
    """
    model = getattr(index, "_embed_model", None)
    if not isinstance(model, PrivateLlamaEmbedding):
        raise InvalidTypeError("index", "an index whose embed_model is a PrivateLlamaEmbedding", model)
    path = Path(folder)
    index.storage_context.persist(persist_dir=str(path))
    ef: PrivateEmbedding = model.embedding
    record = {"format": _FORMAT, "embedding": ef.get_config(), "query_index": ef.pipeline.query_index_state()}
    (path / CONFIG_FILE).write_text(json.dumps(record), encoding="utf-8")
    return path


def load_index(folder: str | Path, *, embedding: Any = None, key: Any = None, index_id: str | None = None) -> Any:
    """Load an index written by :func:`persist_index`, with its PrivateEmbedding as ``embed_model``.

    Args:
        folder: the folder.
        embedding: a PrivateEmbedding to check against the recorded one (default: the recorded
            one is rebuilt, its key from ``key`` or env ``PRIVATE_VECTORS_KEY``; both given and
            different: an error).
        key: the key of a keyed index when ``embedding`` is None.
        index_id: as ``load_index_from_storage``.

    Raises:
        ArtefactError: no readable ``private_vectors.json``.
        ConfigMismatchError: another configuration or key than the index was written with.
    """
    from llama_index.core import StorageContext, load_index_from_storage

    path = Path(folder)
    try:
        record = json.loads((path / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ArtefactError(f"{path}: no readable {CONFIG_FILE} ({type(exc).__name__}); write the index with "
                            "persist_index") from None
    if not isinstance(record, dict) or record.get("format") != _FORMAT:
        raise ArtefactError(f"{path / CONFIG_FILE}: not written by persist_index")
    where = f"LlamaIndex folder {str(path)!r}"
    if embedding is not None:
        _check_embedding(embedding)
    embedding = stored_embedding(record["embedding"], where, embedding, key)
    embedding.pipeline.load_query_index_state(record.get("query_index"))
    storage = StorageContext.from_defaults(persist_dir=str(path))
    return load_index_from_storage(storage, index_id=index_id, embed_model=PrivateLlamaEmbedding(embedding=embedding))


def index_from_collection(collection: Any, embedding: Any = None) -> Any:
    """A ``VectorStoreIndex`` over a Chroma collection written by a PrivateEmbedding
    (``llama-index-vector-stores-chroma``), its ``embed_model`` the collection's PrivateEmbedding.

    Args:
        collection: a collection from ``private_vectors.chroma.open_collection`` or
            ``create_collection`` (its configuration records the PrivateEmbedding).
        embedding: the PrivateEmbedding to use (default: the one the collection was opened with).

    Raises:
        InvalidTypeError: no PrivateEmbedding given or attached to the collection.
    """
    from llama_index.core import VectorStoreIndex

    ef = embedding if embedding is not None else getattr(collection, "_embedding_function", None)
    ef = _check_embedding(ef)
    return VectorStoreIndex.from_vector_store(chroma_vector_store(collection, ef),
                                              embed_model=PrivateLlamaEmbedding(embedding=ef))


def chroma_vector_store(collection: Any, embedding: Any = None) -> Any:
    """LlamaIndex's ``ChromaVectorStore`` over ``collection`` that zeroes the heap bytes Chroma
    leaves in its index files after each write (``private_vectors.chroma.scrub_index_files``).

    Use it where you would write ``ChromaVectorStore(chroma_collection=collection)``. On a sealed
    collection read with its key (``embedding``, default: the collection's own PrivateEmbedding)
    a query fetches K noisy candidates, re-ranks them by their exact vectors and returns them
    opened (the sanitized text), so ``index.as_retriever()`` and query engines read text, not
    markers, and ``delete`` (``index.delete_ref_doc``) also removes the deleted document's keyed
    query-index entries no remaining record refers to; everything else is LlamaIndex's own.
    """
    store = _scrubbing_store_class()(chroma_collection=collection)
    own = embedding if embedding is not None else getattr(collection, "_embedding_function", None)
    store._pv_embedding = own if isinstance(own, PrivateEmbedding) else None
    return store


@functools.cache
def _scrubbing_store_class() -> type:
    """The ``ChromaVectorStore`` subclass, made once (llama-index-vector-stores-chroma is optional)."""
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.schema import BaseNode
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from .llamaindex_sealed import CANDIDATES_ONLY, delete_sealed_ref_doc, query_sealed_store

    from .chroma import protected_write, save_query_index

    class ScrubbingChromaVectorStore(ChromaVectorStore):
        """``ChromaVectorStore`` whose writes run under :func:`~private_vectors.chroma.protected_write`."""

        @classmethod
        def class_name(cls) -> str:
            return "ChromaVectorStore"

        _pv_embedding: Any = PrivateAttr(default=None)

        def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
            with protected_write(self._collection):
                out = super().add(list(nodes), **add_kwargs)
                if self._pv_embedding is not None:  # the keyed query index beside the collection, as add_documents
                    save_query_index(self._collection, self._pv_embedding)
                return out

        def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
            def run() -> None:
                with protected_write(self._collection):
                    super(ScrubbingChromaVectorStore, self).delete(ref_doc_id, **delete_kwargs)

            delete_sealed_ref_doc(self, self._pv_embedding, ref_doc_id, run)
            if self._pv_embedding is not None:
                with protected_write(self._collection):
                    save_query_index(self._collection, self._pv_embedding)

        def query(self, query: Any, **kwargs: Any) -> Any:
            ef = None if kwargs.pop(CANDIDATES_ONLY, False) else self._pv_embedding  # SealedRetriever re-ranks itself
            return query_sealed_store(self, ef, query, lambda q: super(ScrubbingChromaVectorStore, self).query(q, **kwargs))

    return ScrubbingChromaVectorStore
