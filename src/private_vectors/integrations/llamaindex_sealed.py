"""Sealed LlamaIndex nodes: with a keyed PrivateEmbedding the node text LlamaIndex persists is a marker.

A sealed node (:func:`seal_nodes`) keeps its noisy ``embedding``, its id and relationships
(without the copies of related nodes' metadata); its text is the keyed marker and its metadata
the readable keys plus :data:`~private_vectors.sealed.SEALED_KEY` → one AEAD record holding the
sanitized text, the sanitized metadata, the restore record and the exact vector. LlamaIndex then
persists only that: the docstore (``docstore.json``), ``SimpleVectorStore``'s metadata, Chroma's
``documents`` and ``_node_content``. :class:`SealedIngestionCache` seals every node an
``IngestionPipeline`` caches (records without a vector, entries keyed by an HMAC of LlamaIndex's
unkeyed hash), :func:`seal_documents` the input documents a pipeline keeps in its docstore.

The key holder reads with :class:`SealedRetriever` (K noisy candidates fetched in one query,
opened, re-ranked by the exact vectors, top k returned with the sanitized text) or opens any
retrieved nodes with :func:`open_nodes`; over Chroma (``chroma_vector_store``) the store's own
query does the same (:func:`query_sealed_store`), so LlamaIndex's retrievers need nothing else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import SealedStoreError
from ..restore import RESTORE_KEY
from ..sealed.records import SEALED_KEY, Sealer
from ..sealed.rerank import rerank
from ..sealed.stores import drop_refs, fetch_count, readable_metadata, record_of, sealer_of
from ._stored import opened_metadata

__all__ = ["CACHED", "SealedIngestionCache", "SealedRetriever", "delete_ref_doc", "is_sealed", "open_nodes",
           "seal_documents", "seal_nodes"]

CACHED = "pv_cached"
"""Metadata key of a node :class:`SealedIngestionCache` sealed (opened again on a cache hit)."""
_MARKER = "private_vectors"  # llamaindex.MARKER (a sanitized node)
CANDIDATES_ONLY = "pv_candidates_only"  # a query kwarg: chroma_vector_store returns the K noisy candidates as stored
_WHERE = "this sealed LlamaIndex store"


def is_sealed(node: Any) -> bool:
    """Whether ``node`` holds a sealed record (its text is a marker)."""
    return SEALED_KEY in (getattr(node, "metadata", None) or {})


def _sealer(embedding: Any) -> Sealer:
    sealer = sealer_of(embedding)
    if sealer is None:
        raise SealedStoreError("seal: this PrivateEmbedding does not seal (no key, or seal=False)")
    return sealer


def _drop_related_metadata(node: Any) -> None:
    for value in node.relationships.values():
        for info in value if isinstance(value, list) else [value]:
            info.metadata = {}
            info.hash = None


def _exclude(node: Any, *keys: str) -> None:
    for excluded in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
        for key in keys:
            if key not in excluded:
                excluded.append(key)


def _put_sealed(node: Any, sealer: Sealer, record: str, text: str | None, extra: dict[str, Any]) -> None:
    node.set_content(sealer.marker(text))
    node.metadata = {**readable_metadata(extra.pop("_readable", {}), sealer), **extra, SEALED_KEY: record}
    _drop_related_metadata(node)
    _exclude(node, SEALED_KEY, _MARKER, CACHED)


def seal_nodes(embedding: Any, nodes: Sequence[Any]) -> list[Any]:
    """Embed (noisy and exact) and seal, in place, the sanitized nodes not yet sealed; returns ``nodes``.

    Each node's vector is that of its embed content (text and embedded metadata, as
    :class:`~private_vectors.integrations.llamaindex.PrivateLlamaEmbedding` embeds it); the
    record holds the sanitized text, the metadata, the restore record and the exact vector.
    """
    sealer = _sealer(embedding)
    from llama_index.core.schema import MetadataMode

    todo = [n for n in nodes if not is_sealed(n)]
    if not todo:
        return list(nodes)
    texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in todo]
    noisy, exact = embedding.pipeline.embed_sanitized(texts, exact=True)
    metas = [{k: v for k, v in (n.metadata or {}).items() if k not in (_MARKER, RESTORE_KEY)} for n in todo]
    restores = [(n.metadata or {}).get(RESTORE_KEY) for n in todo]
    from ._llamaindex_nodes import pending_refs

    pending = pending_refs(embedding)
    records = sealer.seal_many([n.node_id for n in todo], texts=[n.text for n in todo], metadatas=metas,
                               vectors=exact, restores=restores,
                               index_refs=[pending.pop(n.node_id, []) for n in todo])
    for node, vector, text, meta, record in zip(todo, noisy, [n.text for n in todo], metas, records, strict=True):
        node.embedding = np.asarray(vector, dtype=np.float32).tolist()
        _put_sealed(node, sealer, record, text, {"_readable": meta, _MARKER: "sanitized"})
    return list(nodes)


def seal_documents(embedding: Any, documents: Sequence[Any]) -> list[Any]:
    """Sealed copies (records without a vector) of the input documents a pipeline's docstore keeps."""
    sealer = _sealer(embedding)
    out = []
    for doc in documents:
        if is_sealed(doc) or not getattr(doc, "text", ""):
            out.append(doc)
            continue
        copy = doc.model_copy(deep=True)
        meta = dict(doc.metadata or {})
        record = sealer.seal(doc.node_id, text=doc.text, metadata=meta, vector=None)
        _put_sealed(copy, sealer, record, doc.text, {"_readable": meta, _MARKER: "sanitized"})
        out.append(copy)
    return out


def open_nodes(embedding: Any, nodes: Sequence[Any]) -> list[Any]:
    """The key holder's copies of sealed nodes (or ``NodeWithScore``s): the sanitized text, the
    record's metadata (with the restore record under ``pv_restore``); other nodes as they are.

    Raises:
        SealedStoreError: no key; SealedRecordError: a record that does not open.
    """
    sealer = _sealer(embedding)
    items = list(nodes)
    plain = [getattr(i, "node", i) for i in items]
    opened = iter(_payloads(sealer, [n for n in plain if is_sealed(n)]))
    out = []
    for item, node in zip(items, plain, strict=True):
        if not is_sealed(node):
            out.append(item)
            continue
        copy = _opened_copy(node, next(opened))
        out.append(type(item)(node=copy, score=item.score) if item is not node else copy)
    return out


def _payloads(sealer: Sealer, sealed: Sequence[Any]) -> list[Any]:
    """The opened records of the ``sealed`` nodes, in their order."""
    return sealer.open_many([n.node_id for n in sealed], [record_of(n.metadata, _WHERE) for n in sealed])


def _opened_copy(node: Any, payload: Any) -> Any:
    copy = node.model_copy(deep=True)
    copy.set_content(payload.text or "")
    copy.metadata = {**opened_metadata(payload), _MARKER: "sanitized"}
    _exclude(copy, _MARKER, RESTORE_KEY)
    return copy


def _cache_sealed(sealer: Sealer, node: Any) -> Any:
    if is_sealed(node):
        return node
    copy = node.model_copy(deep=True)
    record = sealer.seal(node.node_id, text=node.get_content(), metadata=dict(node.metadata or {}), vector=None)
    _put_sealed(copy, sealer, record, node.get_content(), {CACHED: True})
    return copy


def _cache_opened(sealer: Sealer, node: Any) -> Any:
    if not (node.metadata or {}).get(CACHED):
        return node
    payload = sealer.open(node.node_id, record_of(node.metadata, _WHERE))
    node.set_content(payload.text or "")
    node.metadata = dict(payload.metadata)
    for excluded in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
        excluded[:] = [k for k in excluded if k not in (SEALED_KEY, CACHED)]
    return node


def _cache_class() -> type:
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.ingestion import IngestionCache

    class _SealedIngestionCache(IngestionCache):  # type: ignore[misc, valid-type]
        """An ``IngestionCache`` whose entries are sealed (see the module); build it with :func:`sealed_cache`."""

        _embedding: Any = PrivateAttr(default=None)

        def _key(self, key: str) -> str:
            import hmac

            sealer = _sealer(self._embedding)
            return "pv-" + hmac.new(sealer.index_key, b"cache\x00" + key.encode("utf-8"), "sha256").hexdigest()

        def put(self, key: str, nodes: Sequence[Any], collection: str | None = None) -> None:
            sealer = _sealer(self._embedding)
            super().put(self._key(key), [_cache_sealed(sealer, n) for n in nodes], collection=collection)

        def get(self, key: str, collection: str | None = None) -> Any:
            got = super().get(self._key(key), collection=collection)
            if got is None:
                return None
            sealer = _sealer(self._embedding)
            return [_cache_opened(sealer, n) for n in got]

    return _SealedIngestionCache


SealedIngestionCache: Any = None  # the class, made on first use (llama-index-core is optional)


def sealed_cache(cache: Any, embedding: Any) -> Any:
    """``cache`` (an ``IngestionCache``) as one that seals its entries for ``embedding``'s store."""
    global SealedIngestionCache
    if SealedIngestionCache is None:
        SealedIngestionCache = _cache_class()
    if isinstance(cache, SealedIngestionCache):
        cache._embedding = embedding
        return cache
    out = SealedIngestionCache(cache=cache.cache, collection=cache.collection, nodes_key=cache.nodes_key)
    out._embedding = embedding
    return out


# -- the key holder's retriever ------------------------------------------------------------------------
def _store_size(index: Any) -> int | None:
    nodes = getattr(getattr(index, "index_struct", None), "nodes_dict", None)
    if nodes:
        return len(nodes)
    store = getattr(index, "vector_store", None)
    data = getattr(store, "data", None)
    if data is not None and getattr(data, "embedding_dict", None) is not None:
        return len(data.embedding_dict)
    collection = getattr(store, "_collection", None)
    count = getattr(collection, "count", None)
    return int(count()) if callable(count) else None


def _retriever_class() -> type:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle

    class _SealedRetriever(BaseRetriever):  # type: ignore[misc, valid-type]
        def __init__(self, index: Any, embedding: Any, similarity_top_k: int = 2, candidates: int | str = "auto",
                     **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._index, self._embedding = index, embedding
            self._k, self._candidates = int(similarity_top_k), candidates

        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            ef = self._embedding
            sent, clean = ef.pipeline.embed_queries([query_bundle.query_str], exact=True)
            n = _store_size(self._index)
            many = fetch_count(self._k, ef, n) if n is not None else max(10 * self._k, 200)
            if self._candidates != "auto":
                many = fetch_count(self._k, ef, n if n is not None else int(self._candidates), self._candidates)
            ours = "_pv_embedding" in getattr(type(getattr(self._index, "vector_store", None)), "__private_attributes__", {})
            inner = self._index.as_retriever(similarity_top_k=max(many, self._k),
                                             vector_store_kwargs={CANDIDATES_ONLY: True} if ours else {})
            got = inner.retrieve(QueryBundle(query_str=query_bundle.query_str, embedding=sent[0].tolist()))
            ranked = open_ranked_nodes(ef, [g.node for g in got], clean[0], self._k)
            if ranked is None:
                return got[:self._k]
            return [NodeWithScore(node=node, score=score) for node, score in ranked]

    return _SealedRetriever


def open_ranked_nodes(embedding: Any, nodes: Sequence[Any], clean: Any, k: int) -> list[tuple[Any, float]] | None:
    """The ``k`` sealed ``nodes`` nearest the clean query vector by their exact vectors, opened
    (sanitized text and metadata), with the exact similarity (cosine; ``l2``: 1 − d/2); None
    when no node is sealed."""
    sealed = [n for n in nodes if is_sealed(n)]
    if not sealed:
        return None
    opened = _sealer(embedding).open_records([n.node_id for n in sealed], [record_of(n.metadata, _WHERE) for n in sealed])
    order, dist = rerank(clean, opened.vectors, k, embedding.space)  # every candidate authenticated, k parsed
    scale = 2.0 if embedding.space == "l2" else 1.0
    return [(_opened_copy(sealed[int(j)], opened.payload(int(j))), 1.0 - float(d) / scale)
            for j, d in zip(order, dist, strict=True)]


def delete_sealed_ref_doc(store: Any, embedding: Any, ref_doc_id: str, run: Any) -> None:
    """``ChromaVectorStore.delete`` on a sealed collection read with its key: ``run`` deletes the
    rows of ``ref_doc_id``, then the text stage's query-index entries that no remaining record
    refers to are removed (in memory: the index is written where the embedding's index is kept)."""
    from .chroma_sealed import _remaining_refs

    sealer = sealer_of(embedding) if embedding is not None else None
    if sealer is None:
        return run()
    held = store._collection.get(where={"document_id": ref_doc_id}, include=["metadatas"])
    pairs = [(i, m[SEALED_KEY]) for i, m in zip(held["ids"], held["metadatas"] or [], strict=True)
             if SEALED_KEY in (m or {})]
    deleted = [p.index_refs for p in sealer.open_many([i for i, _ in pairs], [r for _, r in pairs])]
    run()
    if any(deleted):
        drop_refs(embedding, deleted, _remaining_refs(store._collection, sealer))
    return None


def _index_refs(sealer: Sealer, nodes: Sequence[Any]) -> list[tuple[str, ...]]:
    """The query-index references kept in the records of the sealed ``nodes``."""
    return [p.index_refs for p in _payloads(sealer, [n for n in nodes if n is not None and is_sealed(n)])]


def delete_ref_doc(index: Any, ref_doc_id: str, embedding: Any) -> int:
    """``index.delete_ref_doc(ref_doc_id, delete_from_docstore=True)`` for the key holder of a
    sealed index over LlamaIndex's own stores, which keep the nodes in the docstore: the text
    stage's keyed query-index entries that no remaining sealed node refers to go too (LlamaIndex's
    own delete leaves them). Over Chroma (``chroma_vector_store``) ``index.delete_ref_doc`` does
    this itself; calling this there is the same. Returns how many entries went.

    Raises:
        SealedStoreError: ``embedding`` has no key.
    """
    sealer = _sealer(embedding)
    docstore = index.docstore
    info = docstore.get_ref_doc_info(ref_doc_id)
    ids = info.node_ids if info is not None else []
    deleted = _index_refs(sealer, [docstore.get_node(i, raise_error=False) for i in ids])
    index.delete_ref_doc(ref_doc_id, delete_from_docstore=True)
    if not any(deleted):
        return 0
    return drop_refs(embedding, deleted, _index_refs(sealer, list(docstore.docs.values())))


def query_sealed_store(store: Any, embedding: Any, query: Any, run: Any) -> Any:
    """``ChromaVectorStore.query`` for the key holder of a sealed collection: ``run`` (the
    store's own query) fetches K noisy candidates (:func:`~private_vectors.sealed.candidate_count`)
    and the top ``similarity_top_k`` by exact similarity to the clean vector of ``query.query_str``
    come back opened, so LlamaIndex's own retrievers and query engines read the sanitized text.
    Other queries (no key, no query text, MMR, an unsealed collection) are the store's own."""
    from llama_index.core.vector_stores.types import VectorStoreQueryMode, VectorStoreQueryResult

    if (embedding is None or sealer_of(embedding) is None or not query.query_embedding or not query.query_str
            or query.mode != VectorStoreQueryMode.DEFAULT):
        return run(query)
    k = int(query.similarity_top_k)
    many = fetch_count(k, embedding, int(store._collection.count()))
    got = run(dataclasses.replace(query, similarity_top_k=max(many, k)))
    _, clean = embedding.pipeline.embed_queries([query.query_str], exact=True)
    ranked = open_ranked_nodes(embedding, got.nodes or [], clean[0], k)
    if ranked is None:
        return got
    return VectorStoreQueryResult(nodes=[n for n, _ in ranked], similarities=[s for _, s in ranked],
                                  ids=[n.node_id for n, _ in ranked])


def SealedRetriever(index: Any, embedding: Any, similarity_top_k: int = 2, candidates: int | str = "auto",  # noqa: N802
                    **kwargs: Any) -> Any:
    """A LlamaIndex retriever for the key holder of a sealed index: the ``similarity_top_k``
    nodes by exact similarity among K noisy candidates (K = ``candidate_count``, one query),
    with the sanitized text and metadata; scores: exact cosine (``l2``: 1 − d/2).

    Args:
        index: the ``VectorStoreIndex`` (docstore-backed or over a vector store that keeps text).
        embedding: the index's sealed PrivateEmbedding (with its key).
        similarity_top_k: the results wanted.
        candidates: ``"auto"`` (the rule) or K.
    """
    return _retriever_class()(index, embedding, similarity_top_k, candidates, **kwargs)
