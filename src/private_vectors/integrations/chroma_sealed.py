"""Sealed native Chroma collections: what a write keeps, the key holder's reads, filters and delete.

A collection written by a sealed :class:`~private_vectors.PrivateEmbedding` (a key; ``seal=None``
or ``True``) keeps, per document (:mod:`private_vectors.sealed`):

* the id :meth:`~private_vectors.sealed.Sealer.stored_id` (the user's, or a keyed HMAC);
* as ``documents`` a keyed marker of the stored text (equal texts, equal markers);
* as metadata only the keys of ``Sealing.readable_metadata`` (after the text stage) and
  ``pv_sealed``, the document's AEAD record: the stored text, the metadata, the restore record,
  the exact vector (after erasure, before noise) and the document's query-index references;
* the noisy vector, the only searchable thing.

The key holder's reads (:func:`query`, :func:`get`) fetch K = :func:`~private_vectors.sealed.candidate_count`
noisy candidates in one query, open their records and re-rank them with the exact vectors
against the clean query vector; they return what an unsealed collection returns (the sanitized
text, the metadata with ``pv_restore``), with distances recomputed from the exact vectors.
:func:`delete` removes the vectors, the records and the query-index entries no remaining
document refers to, and destroys the documents' keyring keys (crypto-shredding).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .._progress import counts_documents
from ..embedding import PrivateEmbedding
from ..errors import Described, InvalidParameterError, SealedRecordError, SealedStoreError
from ..keys import KEY_ENV
from ..restore import (
    prepare_with_restore,
    sanitize_recorded,
    seal_records,
    with_records,
)
from ..sealed import SEALED_KEY, Sealer
from ..sealed.rerank import CANDIDATES_PER_RESULT, MIN_CANDIDATES, SPACES
from ..sealed.stores import (
    check_filter,
    document_refs,
    drop_refs,
    fetch_count,
    record_of,
    seal_rows,
)
from ._stored import opened_metadata
from .chroma_cached import cache_of, is_warm, ranked_cold, ranked_warm

__all__ = ["check_where", "clear_write", "collection_sealed", "delete_sealed", "get_sealed", "key_holder_metadata",
           "query_sealed", "ranked_results", "sealed_write", "sealer_of"]

_PAGE = 2000


def collection_sealed(collection: Any) -> bool:
    """Whether ``collection``'s recorded PrivateEmbedding config says it is sealed."""
    try:
        cfg = ((collection.configuration_json or {}).get("embedding_function") or {}).get("config") or {}
    except AttributeError:  # pragma: no cover - a collection-like object without a config
        return False
    return bool(cfg.get("seal"))


def sealer_of(collection: Any, embedding: Any) -> Sealer | None:
    """The :class:`Sealer` of a sealed collection (``embedding`` checked and bound to it), or None
    for a collection that is not sealed (``seal=False`` or written before sealing).

    Raises:
        SealedStoreError: naming ``key``, for a sealed collection and a function without a key.
    """
    sealed = collection_sealed(collection)
    if not isinstance(embedding, PrivateEmbedding):
        if sealed:
            raise SealedStoreError(f"key: collection {collection.name!r} is sealed; pass embedding= or key= (or set "
                                   f"{KEY_ENV}) with the key it was sealed with")
        return None
    if sealed and not embedding.pipeline.keying.keyed:
        raise SealedStoreError(f"key: collection {collection.name!r} is sealed and its PrivateEmbedding has no key; "
                               f"pass key=... (or set {KEY_ENV}) to the key it was sealed with (without it nothing "
                               "of its text can be read)")
    if not embedding.pipeline.seal.sealed:
        return None
    return Sealer.for_embedding(embedding)


def recorded_space(collection: Any) -> str | None:
    """The distance space a Chroma collection records (``"l2"``, ``"cosine"``, ``"ip"``: its HNSW
    or SPANN config), or None."""
    try:
        cfg = collection.configuration_json or {}
    except Exception:  # pragma: no cover
        return None
    for index in ("hnsw", "spann"):
        space = (cfg.get(index) or {}).get("space")
        if space:
            return str(space)
    return None


def collection_space(collection: Any, embedding: Any) -> str:
    """The distance space of ``collection`` (:func:`recorded_space`), else ``embedding``'s."""
    space = recorded_space(collection)
    return space if space in SPACES else str(getattr(embedding, "space", "cosine"))


# -- writing ------------------------------------------------------------------------------------
def clear_write(embedding: PrivateEmbedding, ids: list[str], documents: Sequence[str], metadatas: list[Any] | None, *,
                store_raw_text: bool, sanitize_metadata: Callable[[list[Any]], list[Any]]
                ) -> tuple[dict[str, Any], list[str] | None]:
    """(the keyword arguments of Chroma's add/upsert, the texts stored) of an unsealed collection:
    the sanitized text in clear, each restore record under ``pv_restore``."""
    stored, vectors, records = prepare_with_restore(embedding, documents, ids, store_raw_text=store_raw_text)
    metas = sanitize_metadata(metadatas) if metadatas is not None else None
    kwargs: dict[str, Any] = {"ids": ids, "embeddings": vectors}
    if stored is not None:
        kwargs["documents"] = stored
    metas = with_records(metas, records, len(ids))
    if metas is not None:
        kwargs["metadatas"] = metas
    return kwargs, stored


@counts_documents("documents")
def sealed_write(embedding: PrivateEmbedding, ids: list[str], documents: Sequence[str], metadatas: list[Any] | None,
                 *, sealer: Sealer, store_raw_text: bool, sanitize_metadata: Callable[[list[Any]], list[Any]]
                 ) -> tuple[dict[str, Any], list[str] | None]:
    """(the keyword arguments of Chroma's add/upsert, the texts sealed) for one batch.

    Each text is sanitized once (documents first, so a lone name in a metadata value is known),
    embedded with its exact vector from the same pass, and sealed with its metadata, restore
    record and query-index references; what Chroma gets is the module docstring's.
    """
    items = list(documents)
    sanitized, logs = sanitize_recorded(embedding, items)
    noisy, exact = embedding.pipeline.embed_sanitized(sanitized, raw=items, exact=True)
    kept = embedding.pipeline.texts_to_store(items, sanitized, store_raw_text=store_raw_text)
    restores = None if store_raw_text else seal_records(embedding, ids, items, sanitized, logs)
    metas = sanitize_metadata(metadatas) if metadatas is not None else [None] * len(ids)
    rows = seal_rows(sealer, ids, texts=kept, metadatas=metas, vectors=exact, restores=restores,
                     refs=document_refs(embedding, items, logs))
    out: dict[str, Any] = {"ids": rows.stored_ids, "embeddings": noisy, "metadatas": rows.metadatas}
    if kept is not None:
        out["documents"] = rows.markers
    return out, kept


# -- filters ------------------------------------------------------------------------------------
def check_where(where: Any, where_document: Any, sealer: Sealer) -> None:
    """Refuse ``where_document`` and a ``where`` on a key that is not readable (sealed values
    cannot be filtered by the store)."""
    if where_document:
        raise InvalidParameterError("where_document", "None: the documents of a sealed collection are keyed "
                                    "markers, their text is sealed", Described("<a document filter>"),
                                    note="full-text search needs the text in clear (seal=False)")
    if where is not None and not isinstance(where, Mapping):
        raise InvalidParameterError("where", "a Chroma where filter (a dict)", Described(f"<{type(where).__name__}>"))
    check_filter(where or None, sealer, "where")


# -- reading ------------------------------------------------------------------------------------
def _opened(sealer: Sealer, stored_ids: Sequence[str], metadatas: Sequence[Any]) -> list[Any]:
    return sealer.open_many(list(stored_ids), [record_of(m, "this collection") for m in metadatas])


def key_holder_metadata(payload: Any) -> dict[str, Any] | None:
    """An opened record's metadata as an unsealed store keeps it (its restore record under ``pv_restore``)."""
    return opened_metadata(payload) or None


SIZE_SECONDS = 10.0
"""How long a collection's count() sizes K before it is asked again (one round trip less per query)."""
_sizes: dict[str, tuple[int, float]] = {}


def _size(collection: Any) -> tuple[int, bool]:
    """(the collection's size, whether it was asked now): a count at most SIZE_SECONDS old."""
    import time

    key, now = str(getattr(collection, "id", id(collection))), time.monotonic()
    held = _sizes.get(key)
    if held is not None and now - held[1] < SIZE_SECONDS:
        return held[0], False
    n = int(collection.count())
    _sizes[key] = (n, now)
    return n, True


def _candidates(collection: Any, embedding: PrivateEmbedding, n_results: int, candidates: int | str
                ) -> tuple[int, int]:
    """(K for this query, the collection's size). The size comes from a count at most
    SIZE_SECONDS old; where a held count caps K (a small store that may have grown since), K is
    the rule's floor and Chroma returns at most what it holds."""
    n, fresh = _size(collection)
    k_fetch = fetch_count(n_results, embedding, n, candidates)
    if not fresh and k_fetch >= n:
        floor = candidates if isinstance(candidates, int) else max(CANDIDATES_PER_RESULT * n_results, MIN_CANDIDATES)
        k_fetch = max(k_fetch, floor)
    return k_fetch, n


def query_sealed(collection: Any, embedding: PrivateEmbedding, sealer: Sealer, texts: list[str], n_results: int,
                 where: Any, *, candidates: int | str = "auto", with_vectors: bool = False) -> dict[str, Any]:
    """The key holder's query (see :func:`private_vectors.chroma.query`): per query the top
    ``n_results`` of K noisy candidates, re-ranked by their exact vectors, in one Chroma query
    (K sized by :func:`_candidates`)."""
    k_fetch, size = _candidates(collection, embedding, n_results, candidates)
    space = collection_space(collection, embedding)
    out: dict[str, Any] = {"ids": [], "documents": [], "metadatas": [], "distances": [], "candidates": k_fetch}
    if with_vectors:
        out["exact"], out["query"] = [], []
    if not texts:
        return out
    sent, clean = embedding.pipeline.embed_queries(texts, exact=True)
    for q, ranked in enumerate(ranked_results(collection, sealer, sent, clean, k_fetch, n_results, where, space,
                                                   size=size)):
        out["ids"].append([p.doc_id for p, _ in ranked])
        out["documents"].append([p.text for p, _ in ranked])
        out["metadatas"].append([key_holder_metadata(p) for p, _ in ranked])
        out["distances"].append([d for _, d in ranked])
        if with_vectors:
            out["exact"].append([p.vector for p, _ in ranked])
            out["query"].append(clean[q])
    return out


def ranked_results(collection: Any, sealer: Sealer, sent: Any, clean: Any, k_fetch: int, n_results: int, where: Any,
                   space: str, *, size: int | None = None) -> list[list[tuple[Any, float]]]:
    """Per query the ``n_results`` re-ranked (payload, distance) pairs: through the sealer's
    exact-vector cache when it is warm, else from one query with every candidate's record
    (:mod:`~private_vectors.integrations.chroma_cached`); ``size``: the collection's (default:
    a count at most SIZE_SECONDS old)."""
    if k_fetch == 0:
        return [[] for _ in clean]
    cache = cache_of(sealer, collection)
    if is_warm(cache, _size(collection)[0] if size is None else size):
        assert cache is not None
        return ranked_warm(collection, sealer, cache, sent, clean, k_fetch, n_results, where, space)
    res = collection.query(query_embeddings=np.asarray(sent), n_results=k_fetch, where=where or None,
                           include=["metadatas"])
    return [ranked_cold(sealer, cache, sids, metas, clean[q], n_results, space)
            for q, (sids, metas) in enumerate(zip(res["ids"], res["metadatas"] or [[] for _ in clean], strict=True))]


def get_sealed(collection: Any, sealer: Sealer, ids: Sequence[str] | None, where: Any, limit: int | None,
               offset: int | None) -> dict[str, Any]:
    """The key holder's get (see :func:`private_vectors.chroma.get`), in the order of ``ids``."""
    stored = None if ids is None else [sealer.stored_id(i) for i in ids]
    res = collection.get(ids=stored, where=where or None, limit=limit, offset=offset, include=["metadatas"])
    opened = dict(zip(res["ids"], _opened(sealer, res["ids"], res["metadatas"] or []), strict=True))
    order = list(res["ids"]) if stored is None else [s for s in stored if s in opened]
    chosen = [opened[s] for s in order]
    return {"ids": [p.doc_id for p in chosen], "documents": [p.text for p in chosen],
            "metadatas": [key_holder_metadata(p) for p in chosen]}


# -- delete -------------------------------------------------------------------------------------
def _remaining_refs(collection: Any, sealer: Sealer) -> Iterable[tuple[str, ...]]:
    """The query-index references of every remaining record (opened page by page)."""
    offset = 0
    while True:
        got = collection.get(include=["metadatas"], limit=_PAGE, offset=offset)
        pairs = [(i, (m or {}).get(SEALED_KEY)) for i, m in zip(got["ids"], got["metadatas"] or [], strict=True)]
        for payload in sealer.open_many([i for i, r in pairs if r], [r for _, r in pairs if r]):
            yield payload.index_refs
        if len(got["ids"]) < _PAGE:
            return
        offset += _PAGE


def delete_sealed(collection: Any, embedding: PrivateEmbedding, sealer: Sealer, ids: Sequence[str]) -> int:
    """Delete ``ids`` (the user's) from a sealed collection: rows, records, keyring keys, and the
    text stage's query-index entries no remaining document refers to (removed from the index in
    memory; the caller writes the removals). Returns the rows deleted."""
    stored = [sealer.stored_id(i) for i in ids]
    held = collection.get(ids=stored, include=["metadatas"])
    deleted = []
    for sid, meta in zip(held["ids"], held["metadatas"] or [], strict=True):
        try:
            deleted.append(sealer.open(sid, (meta or {}).get(SEALED_KEY)).index_refs)
        except SealedRecordError:  # already shredded or foreign: its row goes, its entries stay
            continue
    if held["ids"]:
        collection.delete(ids=list(held["ids"]))
    sealer.forget(list(ids))
    if any(deleted):
        drop_refs(embedding, deleted, _remaining_refs(collection, sealer))
    return len(held["ids"])
