"""The key holder's side of a sealed LangChain FAISS drop-in (:class:`~private_vectors.integrations.langchain_faiss.FAISS`).

A sealed store keeps, per document, the noisy vector in the FAISS index and a docstore
``Document`` whose ``page_content`` is the keyed marker and whose metadata is the readable keys
plus the sealed record (:data:`~private_vectors.sealed.SEALED_KEY`). A search embeds the query
once (the vector the store is sent and the clean query vector), fetches K =
:func:`~private_vectors.sealed.stores.fetch_count` noisy candidates in one FAISS search (a
``filter`` on the readable keys applies to them), opens their records and re-ranks them by the
exact vectors; results are ``Document`` objects with the sanitized text and the record's
metadata, scores recomputed from the exact vectors (inner product, or squared L2 for an L2
store), thresholds applied after the re-rank. MMR runs on the exact vectors.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvalidParameterError
from ..sealed.records import SealedPayload
from ..sealed.rerank import exact_distances, mmr
from ..sealed.stores import check_filter, exact_score, fetch_count, record_of
from ._stored import opened_metadata

__all__ = ["SentQuery", "document_of", "sealed_by_ids", "sealed_candidates", "sealed_delete", "sealed_mmr",
           "sealed_scored"]

_WHERE = "this sealed LangChain FAISS store"


class SentQuery(list):  # type: ignore[type-arg]
    """The query vector a sealed store is sent (a list, as ``embed_query`` returns), carrying
    the clean query vector (``.clean``) for the exact re-rank."""

    def __init__(self, sent: list[float], clean: Any) -> None:
        super().__init__(sent)
        self.clean = np.asarray(clean, dtype=np.float64)


def document_of(payload: SealedPayload, stored_id: str) -> Any:
    """The key holder's ``Document``: the sanitized text and the record's metadata (with the restore record)."""
    from langchain_core.documents import Document

    doc_id = payload.doc_id if payload.doc_id else stored_id
    return Document(id=doc_id, page_content=payload.text or "", metadata=opened_metadata(payload))


def sealed_candidates(store: Any, sent: Any, k: int, filter: Any, fetch_k: int) -> tuple[list[str], list[SealedPayload]]:
    """The K noisy candidates (readable-key ``filter`` applied), opened: (stored ids, payloads)."""
    import faiss

    sealer = store._sealer
    check_filter(filter, sealer)
    n = len(store.index_to_docstore_id)
    if n == 0:
        return [], []
    many = max(fetch_count(k, store.embedding_function, n), min(int(fetch_k), n))
    vector = np.array([np.asarray(sent, dtype=np.float32).reshape(-1)], dtype=np.float32)
    if store._normalize_L2:
        faiss.normalize_L2(vector)
    _, indices = store.index.search(vector, many)
    keep = store._create_filter_func(filter) if filter is not None else None
    ids, records = [], []
    for i in indices[0]:
        if i == -1:
            continue
        stored_id = store.index_to_docstore_id[int(i)]
        doc = store.docstore.search(stored_id)
        meta = getattr(doc, "metadata", None)
        if keep is not None and not keep(meta or {}):
            continue
        ids.append(stored_id)
        records.append(record_of(meta, _WHERE))
    return ids, (sealer.open_many(ids, records) if ids else [])


def _space(store: Any) -> str:
    return getattr(store.embedding_function, "space", "l2")


def _clean(store: Any, vector: Any) -> np.ndarray:
    """A by-vector query's clean vector: its first ``dim`` coordinates (the store-geometry one dropped)."""
    dim = int(store.embedding_function.dim)
    return np.asarray(vector, dtype=np.float64).reshape(-1)[:dim]


def sealed_scored(store: Any, sent: Any, clean: Any, k: int = 4, filter: Any = None, fetch_k: int = 20,
                  **kwargs: Any) -> list[tuple[Any, float]]:
    """``similarity_search_with_score_by_vector`` of a sealed store (``clean`` None: from ``sent``)."""
    clean = _clean(store, sent) if clean is None else np.asarray(clean, dtype=np.float64)
    ids, opened = sealed_candidates(store, sent, k, filter, fetch_k)
    if not opened:
        return []
    space = _space(store)
    dist = exact_distances(clean, np.stack([p.vector for p in opened]), space)
    order = np.argsort(dist, kind="stable")[:k]
    out = [(document_of(opened[int(j)], ids[int(j)]), exact_score(float(dist[int(j)]), space)) for j in order]
    threshold = kwargs.get("score_threshold")
    if threshold is not None:
        cmp = operator.le if space == "l2" else operator.ge
        out = [(d, s) for d, s in out if cmp(s, threshold)]
    return out


def sealed_mmr(store: Any, sent: Any, clean: Any, *, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
               filter: Any = None) -> list[tuple[Any, float]]:
    """``max_marginal_relevance_search_with_score_by_vector`` of a sealed store: the ``fetch_k``
    nearest by exact distance among the K candidates, then MMR on their exact vectors."""
    if not 0.0 <= float(lambda_mult) <= 1.0:
        raise InvalidParameterError("lambda_mult", "a number in [0, 1]", lambda_mult)
    clean = _clean(store, sent) if clean is None else np.asarray(clean, dtype=np.float64)
    ids, opened = sealed_candidates(store, sent, max(k, int(fetch_k)), filter, fetch_k)
    if not opened:
        return []
    space = _space(store)
    vectors = np.stack([p.vector for p in opened])
    dist = exact_distances(clean, vectors, space)
    pool = np.argsort(dist, kind="stable")[:max(k, int(fetch_k))]
    chosen = mmr(clean, vectors[pool], k, lambda_mult)
    return [(document_of(opened[int(pool[c])], ids[int(pool[c])]), exact_score(float(dist[int(pool[c])]), space))
            for c in chosen]


def sealed_by_ids(store: Any, ids: Sequence[str]) -> list[Any]:
    """``get_by_ids`` of a sealed store: the held documents opened (ids the store lacks skipped)."""
    sealer = store._sealer
    stored = [sealer.stored_id(i) for i in ids]
    held = [(s, store.docstore.search(s)) for s in stored]
    held = [(s, d) for s, d in held if getattr(d, "metadata", None) is not None]
    if not held:
        return []
    opened = sealer.open_many([s for s, _ in held], [record_of(d.metadata, _WHERE) for _, d in held])
    return [document_of(p, s) for p, (s, _) in zip(opened, held, strict=True)]


def sealed_delete(store: Any, ids: Sequence[str]) -> list[str]:
    """The sealed part of a delete (before the rows go): the stored ids to delete; the
    query-index entries only these documents held are dropped, their keyring keys destroyed."""
    from ..sealed.stores import drop_refs

    sealer = store._sealer
    stored = [sealer.stored_id(i) for i in ids]
    held = set(store.index_to_docstore_id.values())
    present = [s for s in stored if s in held]
    if len(present) != len(stored):
        return stored  # langchain_community's FAISS refuses the missing ids (nothing deleted)
    docs = [store.docstore.search(s) for s in present]
    deleted = sealer.open_many(present, [record_of(d.metadata, _WHERE) for d in docs])
    if any(p.index_refs for p in deleted):
        gone = set(present)
        rest = [s for s in store.index_to_docstore_id.values() if s not in gone]
        metas = [store.docstore.search(s).metadata for s in rest]
        remaining = (p.index_refs for p in sealer.open_many(rest, [record_of(m, _WHERE) for m in metas]))
        drop_refs(store.embedding_function, [p.index_refs for p in deleted], remaining)
    sealer.forget(list(ids))
    return stored
