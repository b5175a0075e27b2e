"""What retrieval a store keeps, for the audit: NDCG@10 through the store's query path against a
clean index of the same documents, or a self-retrieval proxy when there are no judged queries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InvalidParameterError

__all__ = ["retrieval_kept"]


def _scores(Q: np.ndarray, D: np.ndarray, space: str) -> np.ndarray:
    """Similarity (higher is better) of every query to every document in a store's space."""
    Q, D = np.asarray(Q, np.float64), np.asarray(D, np.float64)
    if space == "cosine":
        Q = Q / (np.linalg.norm(Q, axis=1, keepdims=True) + 1e-12)
        D = D / (np.linalg.norm(D, axis=1, keepdims=True) + 1e-12)
        return Q @ D.T
    if space == "l2":
        return -(np.sum(Q * Q, 1)[:, None] - 2 * Q @ D.T + np.sum(D * D, 1)[None, :])
    return Q @ D.T


def _run(S: np.ndarray, ids: Sequence[str], qids: Sequence[str], k: int) -> dict[str, dict[str, float]]:
    top = np.argsort(-S, axis=1, kind="stable")[:, :k]
    return {q: {ids[j]: float(S[r, j]) for j in top[r]} for r, q in enumerate(qids)}


def retrieval_kept(ef: Any, stored: np.ndarray, clean: np.ndarray, ids: Sequence[str], raw: Sequence[str],
                   space: str, *, queries: Mapping[str, str] | None, qrels: Mapping[str, Mapping[str, int]] | None,
                   n_self: int, seed: int, k: int = 10) -> dict[str, Any]:
    """NDCG@10 (given judgements) or the self-retrieval proxy, private vs clean, and top-k overlap.

    Both indexes hold exactly the audited documents; the private side ranks the stored vectors
    in the store's space with the store's query path (``embed_query_array``: its text stage,
    query transform and query policy), exactly (no approximate graph); the clean side ranks the
    store encoder's clean vectors of the raw documents by cosine.
    """
    from .metrics import ndcg_at_k

    qids, texts, judged, mode = _queries(ids, raw, queries, qrels, n_self, seed)
    Q = ef.embed_query_array(texts)
    Qc = ef.encoder.encode(texts)  # the clean encoder (a CachingEncoder in an audit)
    private = _run(_scores(Q, stored, space), ids, qids, k)
    plain = _run(_scores(Qc, clean, "cosine"), ids, qids, k)
    overlap = float(np.mean([len(set(private[q]) & set(plain[q])) / k for q in qids]))
    p, c = ndcg_at_k(private, judged, k), ndcg_at_k(plain, judged, k)
    return {"mode": mode, "queries": len(qids), "ndcg@10": p, "ndcg@10_clean": c,
            "ndcg@10_kept": p / c if c > 0 else float("nan"), f"top{k}_overlap": overlap}


def retrieval_plain(encoder: Any, stored: np.ndarray, ids: Sequence[str], raw: Sequence[str], space: str, *,
                    queries: Mapping[str, str] | None, qrels: Mapping[str, Mapping[str, int]] | None, n_self: int,
                    seed: int, k: int = 10) -> dict[str, Any]:
    """NDCG@10 (given judgements) or the self-retrieval proxy of a plain store: its stored
    vectors ranked in its space against queries embedded by its encoder (no protection, so this
    is the figure the protected copy is compared with)."""
    from .metrics import ndcg_at_k

    qids, texts, judged, mode = _queries(ids, raw, queries, qrels, n_self, seed)
    run = _run(_scores(encoder.encode(texts), stored, space), ids, qids, k)
    return {"mode": mode, "queries": len(qids), "ndcg@10": ndcg_at_k(run, judged, k)}


def _queries(ids: Sequence[str], raw: Sequence[str], queries: Mapping[str, str] | None,
             qrels: Mapping[str, Mapping[str, int]] | None, n_self: int, seed: int
             ) -> tuple[list[str], list[str], dict[str, dict[str, int]], str]:
    """(query ids, query texts, judgements, mode): the given judged queries, or self-retrieval."""
    present = set(ids)
    if queries is not None and qrels is not None:
        judged = {q: {d: g for d, g in rel.items() if d in present} for q, rel in qrels.items() if q in queries}
        judged = {q: r for q, r in judged.items() if any(g > 0 for g in r.values())}
        if not judged:
            raise InvalidParameterError("qrels", "judgements naming at least one audited document", len(qrels))
        qids = sorted(judged)
        return qids, [queries[q] for q in qids], judged, "queries"
    rng = np.random.default_rng(seed)
    pick = sorted(rng.choice(len(ids), size=min(n_self, len(ids)), replace=False).tolist())
    qids = [f"self:{ids[i]}" for i in pick]
    return qids, [raw[i] for i in pick], {q: {ids[i]: 1} for q, i in zip(qids, pick, strict=True)}, "self-retrieval"
