"""Key-holder reads of a sealed store: how many noisy candidates to fetch, and their exact re-rank.

The store ranks the noisy vectors; the key holder fetches the top K of them in one round trip,
opens their records and ranks them again with the exact vectors sealed inside, against the
clean query vector in the same space (after erasure). Distances are given as the store's space
gives them (Chroma's conventions): ``"l2"`` squared Euclidean, ``"ip"`` 1 − q·x, ``"cosine"``
1 − cos(q, x).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_int
from ..encoders.base import l2_normalize
from ..errors import InvalidParameterError

__all__ = ["SPACES", "candidate_count", "exact_distances", "mmr", "rerank"]

SPACES = ("l2", "ip", "cosine")
MIN_CANDIDATES = 200
CANDIDATES_PER_RESULT = 10
RULE_Z = -0.682
RULE_A = 0.1684
"""The rule's two constants: the share of the store fetched for 10 results is Φ(RULE_Z − RULE_A·ε),
fitted (probit, least squares) on SciFact with 100,000 distractor vectors at ε = 5, 7, 10, 14, 20
to the smallest K whose key-holder NDCG@10 reaches 0.98 × the same store without noise, and
checked on NFCorpus (benchmarks/sealed_retrieval.py, results/sealed_retrieval/README.md)."""


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def candidate_count(k: int, eps: float, n: int, *, candidates: int | str = "auto") -> int:
    """K, the number of noisy candidates fetched for ``k`` results from a store of ``n`` vectors.

    Rule: ``K = min(n, max(10 k, 200, ceil(k/10 · n · Φ(RULE_Z − RULE_A · ε))))``, Φ the standard
    normal distribution function. Why this shape: ranked against a query, a noisy vector's score is
    its clean score plus noise of spread about 1/ε (Laplace noise of norm √dim/ε seen along one unit
    direction), so a clean top result is passed by a share of the store that falls like a normal
    tail in ε and does not grow with the store's size; the constants aim at a key-holder NDCG@10 of
    0.98 × the same store without noise (fitted on SciFact with 100,000 distractor vectors; the
    noisy top K then holds about 94 % of the clean top 10 at ε = 10, 80 % at ε = 5). With the
    packaged encoder's Laplace noise and N ≈ 105,000 that is K ≈ 6.4 % of N at ε = 5, 0.9 % at
    ε = 10 and the floor of 200 from ε ≈ 14 (measured at these K: 0.99 × clean on SciFact and on
    NFCorpus at ε = 10, 0.95 × and 0.97 × at ε = 5; benchmarks/sealed_retrieval.py). The probit
    line is a compromise over ε = 5–20: it fetches a little less than the aim at ε = 5.
    K grows linearly in ``k`` and ``n``; the floor ``max(10 k, 200)`` covers small stores and large ε,
    where the few near neighbours of a query trade places among themselves.
    ``candidates`` given as an int overrides the rule (still capped at ``n``).
    """
    k = check_int(k, "n_results", minimum=1)
    n = check_int(n, "n", minimum=0)
    if not (isinstance(eps, (int, float)) and not isinstance(eps, bool) and math.isfinite(eps) and eps > 0):
        raise InvalidParameterError("eps", "a finite ε > 0", eps)
    if candidates == "auto":
        share = _phi(RULE_Z - RULE_A * float(eps))
        want = max(CANDIDATES_PER_RESULT * k, MIN_CANDIDATES, math.ceil(k / 10 * n * share))
    elif isinstance(candidates, int) and not isinstance(candidates, bool):
        want = check_int(candidates, "candidates", minimum=k)
    else:
        raise InvalidParameterError("candidates", "'auto' or an int >= n_results", candidates)
    return min(n, want)


def exact_distances(query: np.ndarray, vectors: np.ndarray, space: str) -> np.ndarray:
    """Distances of ``vectors`` (m, d) to ``query`` (d,) in ``space`` (float64)."""
    if space not in SPACES:
        raise InvalidParameterError("space", f"one of {SPACES}", space)
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    x = np.asarray(vectors, dtype=np.float64).reshape(-1, q.shape[0]) if np.size(vectors) else np.zeros((0, q.shape[0]))
    if space == "l2":
        return np.sum((x - q) ** 2, axis=1)
    if space == "ip":
        return 1.0 - x @ q
    return 1.0 - l2_normalize(x) @ l2_normalize(q[None, :])[0]


def rerank(query: np.ndarray, vectors: np.ndarray, k: int, space: str) -> tuple[np.ndarray, np.ndarray]:
    """(indices of the ``k`` nearest of ``vectors``, their distances), nearest first; ties keep
    the store's order (a stable sort)."""
    dist = exact_distances(query, vectors, space)
    order = np.argsort(dist, kind="stable")[:k]
    return order, dist[order]


def mmr(query: np.ndarray, vectors: np.ndarray, k: int, lambda_mult: float = 0.5) -> list[int]:
    """Maximal marginal relevance (Carbonell & Goldstein, 1998) on exact vectors, cosine
    similarity: each step picks argmax λ·sim(q, x) − (1 − λ)·max sim(x, chosen)."""
    if not 0.0 <= float(lambda_mult) <= 1.0:
        raise InvalidParameterError("lambda_mult", "a number in [0, 1]", lambda_mult)
    x = l2_normalize(np.asarray(vectors, dtype=np.float64))
    if x.shape[0] == 0 or k <= 0:
        return []
    rel = x @ l2_normalize(np.asarray(query, dtype=np.float64).reshape(1, -1))[0]
    chosen = [int(np.argmax(rel))]
    best_sim = x @ x[chosen[0]]
    while len(chosen) < min(k, x.shape[0]):
        score = lambda_mult * rel - (1.0 - lambda_mult) * best_sim
        score[chosen] = -np.inf
        nxt = int(np.argmax(score))
        chosen.append(nxt)
        best_sim = np.maximum(best_sim, x @ x[nxt])
    return chosen
