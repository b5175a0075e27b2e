"""LangChain's records keyed by content: the embedding cache, the indexing record manager, the
parent-document docstore.

Three LangChain components keep, beside a vector store, something derived from the raw text:

- ``CacheBackedEmbeddings`` keys each cached vector by an unkeyed hash (SHA-1 by default) of the
  raw text;
- ``index()`` keys each document, in the record manager (e.g. ``SQLRecordManager``'s SQLite
  table) *and* as its id in the vector store, by an unkeyed hash of its raw text and metadata,
  and records its source (``source_id_key``: often a file path) as given;
- ``ParentDocumentRetriever`` keeps the whole parent documents in its docstore.

A hash of a short text is reversed by hashing guesses, so each of these keeps the raw text in
all but name. The drop-ins here are used the same way, only the import changes, and key those
records by an HMAC under a subkey of the PrivateEmbedding's key
(:mod:`private_vectors.integrations._hashing`; a key is required), or sanitize what they keep:

    from private_vectors.langchain import CacheBackedEmbeddings, ParentDocumentRetriever, index

- :class:`CacheBackedEmbeddings`: ``from_bytes_store(PrivateEmbedding, store)`` keys the cache
  by an HMAC of the raw text and of the embedding's configuration (another ε or model never
  reads a stale vector). Handed to the drop-in ``Chroma`` or ``FAISS``, the store sanitizes each
  text once, stores that text, and embeds only what the cache misses.
- :func:`index` / :func:`aindex`: ``langchain_core.indexing.index``, with the record keys (and so
  the vector store ids) and the source ids keyed HMACs.
- :class:`ParentDocumentRetriever`: the parents go through the text stage (text, string
  metadata, an encrypted restore record with a keyed text stage) before the docstore keeps them;
  the children go to the vector store, whose own path sanitizes them.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._progress import advance, counts_documents
from ..embedding import PrivateEmbedding
from ..errors import (
    Described,
    InvalidParameterError,
    ModelNotAvailableError,
    PrivacyWarning,
    SealedStoreError,
)
from ..guard import protected_path
from ..restore import (
    sanitize_recorded,
    seal_records,
    with_records,
)
from ..sealed import SEALED_KEY
from ..sealed.stores import seal_rows, sealer_of
from ._hashing import record_hasher
from ._stored import opened_metadata, sanitize_metadatas

try:
    from langchain_classic.embeddings import CacheBackedEmbeddings as _CacheBackedEmbeddings
    from langchain_classic.retrievers import ParentDocumentRetriever as _ParentDocumentRetriever
    from langchain_core.documents import Document
    from langchain_core.indexing import aindex as _aindex
    from langchain_core.indexing import index as _index
except ImportError as exc:  # pragma: no cover - optional dependency
    raise ModelNotAvailableError("the LangChain cache, index and parent-document drop-ins need langchain-core and "
                                 "langchain-classic: pip install 'private-vectors[langchain]'") from exc

__all__ = ["CacheBackedEmbeddings", "ParentDocumentRetriever", "aindex", "index", "prepare_cached", "unwrap"]

UNKEYED_MESSAGE = (
    "{what} is an unkeyed hash of the raw text ({encoder}), kept in the {where}: hashing guesses (a list of "
    "names, a form letter with each name filled in) reverses it. Leave key_encoder unset: the private_vectors "
    "drop-in keys it by an HMAC under the PrivateEmbedding's key."
)


def unwrap(embedding: Any) -> tuple[Any, Any]:
    """(the PrivateEmbedding behind ``embedding``, its vector cache) for an embedding a store is
    given: a PrivateEmbedding (no cache), a ``CacheBackedEmbeddings`` over one (its document
    store), or anything else (returned as it is, no cache)."""
    if isinstance(embedding, _CacheBackedEmbeddings) and isinstance(embedding.underlying_embeddings,
                                                                     PrivateEmbedding):
        return embedding.underlying_embeddings, embedding.document_embedding_store
    return embedding, None


@counts_documents("texts")
def prepare_cached(embedding: PrivateEmbedding, cache: Any, texts: list[str], ids: Sequence[Any], *,
                   store_raw_text: bool = False) -> tuple[list[str] | None, np.ndarray, list[str] | None]:
    """:func:`~private_vectors.restore.prepare_with_restore` through a vector cache: each text is
    sanitized once (what is stored), the cached vectors are read, and only the misses are encoded
    and noised (then written to the cache); the stores call it through
    :func:`~private_vectors.integrations._cached_records.prepare_cached` (no cache: ``prepare_with_restore``)."""
    sanitized, logs = sanitize_recorded(embedding, texts, store_raw_text=store_raw_text)
    found = list(cache.mget(texts))
    missing = [i for i, v in enumerate(found) if v is None]
    advance(len(found) - len(missing))  # (read from the cache: done)
    if missing:
        fresh = embedding.pipeline.embed_sanitized([sanitized[i] for i in missing], raw=[texts[i] for i in missing])
        cache.mset([(texts[i], [float(x) for x in v]) for i, v in zip(missing, fresh, strict=True)])
        for i, v in zip(missing, fresh, strict=True):
            found[i] = v
    vectors = np.asarray(found, dtype=np.float32)
    stored = embedding.pipeline.texts_to_store(texts, sanitized, store_raw_text=store_raw_text)
    return stored, vectors, seal_records(embedding, ids, texts, sanitized, logs)


# -- CacheBackedEmbeddings ----------------------------------------------------------------------------
class CacheBackedEmbeddings(_CacheBackedEmbeddings):
    """LangChain's ``CacheBackedEmbeddings`` whose cache keys are keyed HMACs (see the module)."""

    @classmethod
    def from_bytes_store(cls, underlying_embeddings: Any, document_embedding_cache: Any, *, namespace: str = "",
                         batch_size: int | None = None, query_embedding_cache: Any = False,
                         key_encoder: Any = None) -> CacheBackedEmbeddings:
        """As LangChain's, with ``key_encoder`` unset: for a PrivateEmbedding, ``namespace`` + an
        HMAC of the embedding's configuration and the text under a subkey of its key.

        Args:
            underlying_embeddings: the PrivateEmbedding (another ``Embeddings``: LangChain's
                behaviour, SHA-1 keys by default).
            document_embedding_cache: a LangChain ``ByteStore`` (``LocalFileStore``, ``InMemoryByteStore``…).
            namespace: a prefix of the keys.
            batch_size: texts embedded between cache writes.
            query_embedding_cache: as LangChain's. Query vectors of ``query="clean"`` carry no
                noise: caching them stores them, with a PrivacyWarning.
            key_encoder: LangChain's choice (a hash name or a callable); a hash name over a
                PrivateEmbedding is an unkeyed hash of the raw text, kept with a PrivacyWarning.

        Raises:
            InvalidParameterError: a PrivateEmbedding without a key (nothing to key the cache with).
        """
        if not isinstance(underlying_embeddings, PrivateEmbedding):
            return _from_bytes_store(cls, underlying_embeddings, document_embedding_cache, namespace=namespace,
                                     batch_size=batch_size, query_embedding_cache=query_embedding_cache,
                                     key_encoder="sha1" if key_encoder is None else key_encoder)
        if query_embedding_cache is not False and underlying_embeddings.pipeline.query == "clean":
            warnings.warn("query_embedding_cache: this PrivateEmbedding's query vectors carry no noise "
                          "(query='clean'); a query cache stores them where an inversion attack can read them",
                          PrivacyWarning, stacklevel=2)
        if key_encoder is None:
            key_encoder = _cache_key_encoder(underlying_embeddings, namespace)
            namespace = ""
        elif isinstance(key_encoder, str):
            warnings.warn(UNKEYED_MESSAGE.format(what="each cache key", encoder=key_encoder, where="cache"),
                          PrivacyWarning, stacklevel=2)
        return _from_bytes_store(cls, underlying_embeddings, document_embedding_cache, namespace=namespace,
                                 batch_size=batch_size, query_embedding_cache=query_embedding_cache,
                                 key_encoder=key_encoder)


def _from_bytes_store(cls: Any, *args: Any, **kwargs: Any) -> Any:
    return super(CacheBackedEmbeddings, cls).from_bytes_store(*args, **kwargs)


def _vector_identity(embedding: PrivateEmbedding) -> str:
    """What the cached vectors depend on: the fields that change what stored vectors mean, without
    the text stage's per-instance key salt and check (another instance with the same key and
    configuration reads the same cache)."""
    view = dict(embedding.pipeline.drift_view())
    if isinstance(view.get("sanitizer"), dict):
        view["sanitizer"] = {k: v for k, v in view["sanitizer"].items() if k not in ("key_salt", "key_check")}
    return json.dumps(view, sort_keys=True, default=str)


def _cache_key_encoder(embedding: PrivateEmbedding, namespace: str) -> Callable[[str], str]:
    hasher = record_hasher(embedding, "langchain-cache", required="underlying_embeddings")
    assert hasher is not None
    config = _vector_identity(embedding)

    def encode(text: str) -> str:
        return f"{namespace}{hasher(config + chr(0) + text)}"

    return encode


# -- index() ---------------------------------------------------------------------------------------
def _store_embedding(vector_store: Any, embedding: Any) -> PrivateEmbedding:
    ef = embedding if embedding is not None else getattr(vector_store, "embeddings", None)
    ef, _ = unwrap(ef)
    if not isinstance(ef, PrivateEmbedding):
        raise InvalidParameterError("vector_store", "a vector store whose embeddings is a PrivateEmbedding "
                                    "(or pass embedding=)", Described(type(vector_store).__name__))
    return ef


def _document_key(embedding: PrivateEmbedding) -> Callable[[Any], str]:
    hasher = record_hasher(embedding, "langchain-index", required="vector_store")
    assert hasher is not None

    def key(doc: Any) -> str:
        try:
            body = json.dumps([doc.page_content, doc.metadata or {}], sort_keys=True, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError("docs_source", "documents whose metadata JSON can hold (str, number, bool, "
                                        "None, lists, dicts)", Described(type(exc).__name__)) from None
        return hasher(body)

    return key


def _source_key(embedding: PrivateEmbedding, source_id_key: Any) -> Any:
    """``source_id_key`` as a callable returning a keyed HMAC of the source id (None: None)."""
    if source_id_key is None:
        return None
    hasher = record_hasher(embedding, "langchain-source", required="vector_store")
    assert hasher is not None
    if isinstance(source_id_key, str):
        name = source_id_key

        def read(doc: Any) -> Any:
            if name not in (doc.metadata or {}):
                raise InvalidParameterError("source_id_key", f"a metadata value {name!r} in every document",
                                            Described("a document without it"))
            return doc.metadata[name]
    elif callable(source_id_key):
        read = source_id_key
    else:
        raise InvalidParameterError("source_id_key", "None, a metadata key (str) or a callable", source_id_key)

    def source(doc: Any) -> Any:
        value = read(doc)
        return None if value is None else hasher(str(value))

    return source


def _index_arguments(vector_store: Any, embedding: Any, source_id_key: Any, key_encoder: Any) -> dict[str, Any]:
    ef = _store_embedding(vector_store, embedding)
    if key_encoder is None:
        key_encoder = _document_key(ef)
    elif isinstance(key_encoder, str):
        warnings.warn(UNKEYED_MESSAGE.format(what="each record key (and vector store id)", encoder=key_encoder,
                                             where="record manager and the vector store"), PrivacyWarning, stacklevel=3)
    return {"source_id_key": _source_key(ef, source_id_key), "key_encoder": key_encoder}


def index(docs_source: Any, record_manager: Any, vector_store: Any, *, embedding: Any = None,
          source_id_key: Any = None, key_encoder: Any = None, **kwargs: Any) -> Any:
    """``langchain_core.indexing.index`` with keyed record keys and source ids.

    Args:
        docs_source: a loader or documents, as LangChain's.
        record_manager: a LangChain ``RecordManager`` (``SQLRecordManager``…).
        vector_store: the vector store (the drop-in ``Chroma`` or ``FAISS``: it sanitizes the text).
        embedding: the PrivateEmbedding keying the records (default: the vector store's).
        source_id_key: as LangChain's (a metadata key or a callable); the recorded source id is
            an HMAC of its value.
        key_encoder: leave unset (an HMAC of each document's text and metadata); a hash name is
            LangChain's unkeyed hash, kept with a PrivacyWarning.
        **kwargs: LangChain's other arguments (``cleanup``, ``batch_size``, ``force_update``…).

    Raises:
        InvalidParameterError: no PrivateEmbedding with a key, or a document without its source id.
    """
    return _index(docs_source, record_manager, vector_store,
                  **_index_arguments(vector_store, embedding, source_id_key, key_encoder), **kwargs)


async def aindex(docs_source: Any, record_manager: Any, vector_store: Any, *, embedding: Any = None,
                 source_id_key: Any = None, key_encoder: Any = None, **kwargs: Any) -> Any:
    """The async :func:`index` (``langchain_core.indexing.aindex``)."""
    return await _aindex(docs_source, record_manager, vector_store,
                         **_index_arguments(vector_store, embedding, source_id_key, key_encoder), **kwargs)


def raw_hash_ids(texts: Sequence[str], metadatas: Sequence[Any] | None, ids: Sequence[Any] | None) -> str | None:
    """The LangChain hash name when ``ids`` are ``index()``'s unkeyed hashes of the documents
    (checked on the first one), else None."""
    if not ids or not texts:
        return None
    try:
        from langchain_core.indexing.api import _get_document_with_hash
    except ImportError:  # pragma: no cover - another langchain-core
        return None
    doc = Document(page_content=texts[0], metadata=dict((metadatas or [None])[0] or {}))
    for name in ("sha1", "sha256", "sha512", "blake2b"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                if _get_document_with_hash(doc, key_encoder=name).id == str(ids[0]):
                    return name
            except Exception:  # pragma: no cover - metadata JSON cannot hold
                return None
    return None


def warn_if_raw_hash_ids(store: Any, texts: Sequence[str], metadatas: Sequence[Any] | None,
                         ids: Sequence[Any] | None) -> None:
    """One PrivacyWarning per store when its ids are ``index()``'s unkeyed hashes of the raw text."""
    if getattr(store, "_raw_ids_warned", False):
        return
    name = raw_hash_ids(texts, metadatas, ids)
    if name is not None:
        store._raw_ids_warned = True
        warnings.warn(UNKEYED_MESSAGE.format(what="each document id (from langchain_core.indexing.index)",
                                             encoder=name, where="vector store and the record manager")
                      + " Use private_vectors.langchain.index.", PrivacyWarning, stacklevel=3)


# -- ParentDocumentRetriever ------------------------------------------------------------------------
class ParentDocumentRetriever(_ParentDocumentRetriever):
    """LangChain's ``ParentDocumentRetriever`` whose docstore keeps sanitized parents only.

    Each parent's ``page_content`` and string metadata go through the vector store's
    PrivateEmbedding (or ``embedding``) before the docstore keeps it; with a keyed text stage it
    carries an encrypted restore record (``private_vectors.restore`` gives the key holder the
    original back). The children go to the vector store as LangChain sends them: use the drop-in
    ``Chroma`` or ``FAISS``, which sanitize them. Retrieval returns the sanitized parents.

    Raises:
        InvalidParameterError: (on adding) no PrivateEmbedding on the vector store or given.
    """

    embedding: Any = None
    """The PrivateEmbedding (default: the vector store's ``embeddings``)."""

    def _split_docs_for_adding(self, documents: list[Any], ids: list[str] | None = None, *,
                               add_to_docstore: bool = True) -> tuple[list[Any], list[tuple[str, Any]]]:
        docs, full_docs = super()._split_docs_for_adding(documents, ids, add_to_docstore=add_to_docstore)
        if not full_docs or not add_to_docstore:
            return docs, full_docs
        ef = _store_embedding(self.vectorstore, self.embedding)
        return docs, list(zip([i for i, _ in full_docs], sanitize_documents(ef, full_docs), strict=True))

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
        return open_parents(self.embedding or getattr(self.vectorstore, "embeddings", None),
                            super()._get_relevant_documents(query, run_manager=run_manager))

    async def _aget_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
        return open_parents(self.embedding or getattr(self.vectorstore, "embeddings", None),
                            await super()._aget_relevant_documents(query, run_manager=run_manager))


def open_parents(embedding: Any, documents: Sequence[Any]) -> list[Any]:
    """Sealed parents (a keyed marker and a record) opened for the key holder: the sanitized
    text and metadata (with ``pv_restore``); other documents as they are.

    Raises:
        SealedStoreError: naming ``key``, for sealed parents and no keyed embedding.
    """
    sealed = [n for n, d in enumerate(documents) if SEALED_KEY in (d.metadata or {})]
    if not sealed:
        return list(documents)
    ef, _ = unwrap(embedding)
    sealer = sealer_of(ef) if isinstance(ef, PrivateEmbedding) and ef.pipeline.keying.keyed else None
    if sealer is None:
        raise SealedStoreError("key: the parent documents are sealed; give the retriever's vector store the "
                               "PrivateEmbedding with the key they were sealed with")
    out = list(documents)
    opened = sealer.open_many([out[n].id for n in sealed], [out[n].metadata[SEALED_KEY] for n in sealed])
    for n, p in zip(sealed, opened, strict=True):
        out[n] = Document(id=p.doc_id, page_content=p.text or "", metadata=opened_metadata(p))
    return out


def sanitize_documents(embedding: PrivateEmbedding, documents: Sequence[tuple[str, Any]]) -> list[Any]:
    """``(id, Document)`` pairs as sanitized Documents carrying their id (and restore record)."""
    ids = [i for i, _ in documents]
    texts = [d.page_content for _, d in documents]
    with protected_path():
        clean, logs = sanitize_recorded(embedding, texts)
        records = seal_records(embedding, ids, texts, clean, logs)
        metas = sanitize_metadatas(embedding, [dict(d.metadata or {}) for _, d in documents], len(documents))
    sealer = sealer_of(embedding)
    if sealer is not None:  # a sealed store: its parents are sealed too (no vector of their own)
        rows = seal_rows(sealer, ids, texts=clean, metadatas=metas, vectors=np.zeros((len(ids), 1), np.float32),
                         restores=records)
        return [Document(id=i, page_content=k, metadata=m) for i, k, m in zip(ids, rows.markers, rows.metadatas,
                                                                              strict=True)]
    metas = with_records(metas, records, len(documents)) or metas
    return [Document(id=i, page_content=c, metadata=m or {}) for i, c, m in zip(ids, clean, metas, strict=True)]
