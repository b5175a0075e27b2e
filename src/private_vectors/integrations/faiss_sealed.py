"""The key holder's reads and deletes of a sealed :class:`~private_vectors.integrations.faiss.PrivateFaissIndex`.

A sealed index keeps per document the noisy vector (in FAISS), the marker as its text and the
readable metadata plus the document's sealed record (in the sidecar). A search fetches K =
:func:`~private_vectors.sealed.stores.fetch_count` noisy candidates per query in one FAISS
search, opens their records and re-ranks them by the exact vectors against the clean query
vector; results carry the record's sanitized text and metadata, scores recomputed from the exact
vectors. A delete drops the document's vector, record and query-index entries (those no
remaining document holds) and destroys its keyring key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..sealed.records import SealedPayload
from ..sealed.stores import drop_refs, fetch_count, open_ranked, record_of

__all__ = ["forget_sealed", "sealed_hits", "sealed_payloads"]

Hit = tuple[int, SealedPayload, float]
"""(internal id, opened record, exact distance in the index's space)."""


def _where(index: Any) -> str:
    return "this sealed FAISS index"


def _stored_id(index: Any, internal: int) -> str:
    return str(index._keys.get(internal, internal))


def sealed_payloads(index: Any, internal: Sequence[int]) -> list[SealedPayload]:
    """The opened records of the documents ``internal`` (internal ids)."""
    ids = [int(i) for i in internal]
    records = [record_of(index.metadata.get(i), _where(index)) for i in ids]
    return index._sealer.open_many([_stored_id(index, i) for i in ids], records)


def sealed_hits(index: Any, queries: list[str], k: int, candidates: int | str = "auto") -> list[list[Hit]]:
    """Per query the ``k`` nearest documents by exact distance among the K noisy candidates."""
    sent, clean = index.embedding.pipeline.embed_queries(queries, exact=True)
    if index._index is None or len(index) == 0:
        return [[] for _ in queries]
    many = fetch_count(k, index.embedding, len(index), candidates)
    _, ids = index._index.search(index._prepare(sent), many)
    out = []
    for q, row in enumerate(ids):
        got = [int(i) for i in row if i >= 0]
        records = [record_of(index.metadata.get(i), _where(index)) for i in got]
        ranked = open_ranked(index._sealer, [_stored_id(index, i) for i in got], records, clean[q], k, index.space)
        out.append([(got[pos], payload, dist) for pos, payload, dist in ranked])
    return out


def forget_sealed(index: Any, internal: list[int], public: list[Any]) -> None:
    """The sealed part of a delete: query-index entries only the deleted documents held, and
    their keyring keys (call it before the rows are dropped)."""
    deleted = sealed_payloads(index, internal)
    if any(p.index_refs for p in deleted):
        gone = set(internal)
        rest = [i for i in index.metadata if i not in gone]
        drop_refs(index.embedding, [p.index_refs for p in deleted], (p.index_refs for p in sealed_payloads(index, rest)))
    index._sealer.forget([p.doc_id for p in deleted] or public)


def as_arrays(hits: list[list[Hit]], k: int, space: str) -> tuple[np.ndarray, np.ndarray]:
    """FAISS-shaped (scores, ids) of ``hits`` (-1 ids past the hits)."""
    from ..sealed.stores import exact_score

    width = min(k, max((len(h) for h in hits), default=0))
    scores = np.full((len(hits), width), -np.inf if space != "l2" else np.inf, dtype=np.float32)
    ids = np.full((len(hits), width), -1, dtype=np.int64)
    for q, row in enumerate(hits):
        for j, (i, _, dist) in enumerate(row[:width]):
            scores[q, j], ids[q, j] = exact_score(dist, space), i
    return scores, ids
