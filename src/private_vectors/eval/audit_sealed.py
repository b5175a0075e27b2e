"""A sealed store in the audit: what is readable without the key, and what the records hold.

A sealed store (config ``"seal"``, one ``pv_sealed`` record per document, a ``pv-sealed:`` marker
as the document) keeps no readable document text. Without the key, a copy of it gives its
noisy vectors, its ids, the metadata keys kept readable for filtering, the markers (keyed
hashes: equal texts have equal markers) and the configuration: :func:`sealed_view` turns what
the store holds into that readable view and counts it. With the key, :func:`open_records`
opens the records: the sanitized text the key holder (and an LLM behind a retriever) reads,
and the exact vectors the key holder re-ranks with (:func:`key_holder_retrieval`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["key_holder_retrieval", "open_records", "sealed_view"]


def sealed_view(config: Mapping[str, Any], texts: Sequence[str | None], metadatas: Sequence[Any]
                ) -> tuple[list[str | None], list[str | None], dict[str, Any] | None]:
    """(readable texts, records, what is readable) of a store's rows; ``(texts, [None]*n, None)``
    for a store that is not sealed (no ``"seal"`` in its config and no record or marker)."""
    from ..sealed import SEALED_KEY
    from ..sealed.records import is_marker, is_record

    records = [(m or {}).get(SEALED_KEY) if isinstance(m, Mapping) else None for m in metadatas]
    records = [r if is_record(r) else None for r in records]
    markers = sum(is_marker(t) for t in texts)
    seal = config.get("seal")
    if not seal and not markers and not any(records):
        return list(texts), [None] * len(texts), None
    readable_keys = sorted({k for m in metadatas if isinstance(m, Mapping) for k in m if k != SEALED_KEY})
    info = {"documents": len(texts), "records": sum(r is not None for r in records), "markers": markers,
            "readable_metadata_keys": len(readable_keys),
            "readable_metadata_keys_declared": list((seal or {}).get("readable_metadata") or []) if isinstance(seal, Mapping) else [],
            "ids": (seal or {}).get("ids", "given") if isinstance(seal, Mapping) else "given",
            "readable": "noisy vectors, ids, readable metadata, markers (keyed hashes), the configuration"}
    return [None if is_marker(t) else t for t in texts], records, info


def open_records(embedding: Any, ids: Sequence[str], records: Sequence[str | None]) -> list[Any]:
    """The key holder's payloads of ``records`` (None where a row has none), opened with the store's
    :class:`~private_vectors.sealed.Sealer` (the function was bound to the store by the audit's read).

    Raises:
        SealedRecordError: a record that does not open under this store's key (nothing returned).
    """
    from ..sealed import Sealer

    held = [(i, r) for i, r in zip(ids, records, strict=True) if r is not None]
    if not held:
        return [None] * len(ids)
    opened = iter(Sealer.for_embedding(embedding).open_many([i for i, _ in held], [r for _, r in held]))
    return [next(opened) if r is not None else None for r in records]


def key_holder_retrieval(embedding: Any, stored: np.ndarray, exact: np.ndarray, clean: np.ndarray,
                         ids: Sequence[str], raw: Sequence[str], space: str, *, queries: Mapping[str, str] | None,
                         qrels: Mapping[str, Mapping[str, int]] | None, n_self: int, seed: int, k: int = 10
                         ) -> dict[str, Any]:
    """The key holder's NDCG@10 over the audited documents: the store's query vector ranks the
    noisy ``stored`` vectors, the top K (:func:`~private_vectors.sealed.candidate_count` for the
    audited documents) are re-ranked by their ``exact`` vectors against the clean query vector;
    beside it the clean index (``clean``, cosine) and the noisy ranking alone."""
    from ..sealed import candidate_count
    from ..sealed.rerank import rerank
    from .audit_retrieval import _queries, _run, _scores
    from .metrics import ndcg_at_k

    qids, texts, judged, mode = _queries(ids, raw, queries, qrels, n_self, seed)
    sent, clean_q = embedding.pipeline.embed_queries(list(texts), exact=True)
    K = candidate_count(k, float(embedding.eps), len(ids))
    noisy = _scores(sent, stored, space)
    top = np.argsort(-noisy, axis=1, kind="stable")[:, :K]
    run: dict[str, dict[str, float]] = {}
    for r, q in enumerate(qids):
        order, dist = rerank(clean_q[r], exact[top[r]], k, space)
        run[q] = {ids[int(top[r][j])]: -float(d) for j, d in zip(order, dist, strict=True)}
    plain = _run(_scores(embedding.encoder.encode(list(texts)), clean, "cosine"), ids, qids, k)
    p, c, n = ndcg_at_k(run, judged, k), ndcg_at_k(plain, judged, k), ndcg_at_k(_run(noisy, ids, qids, k), judged, k)
    return {"mode": mode, "queries": len(qids), "ndcg@10": p, "ndcg@10_clean": c,
            "ndcg@10_kept": p / c if c > 0 else float("nan"), "ndcg@10_noisy": n, "candidates": K,
            "documents": len(ids), "key_holder": True}
