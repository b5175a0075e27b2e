"""Metrics of the benchmark harness, as pure functions.

* :func:`ndcg_at_k` — retrieval utility (the SPARSE paper's metric for BEIR sets), computed
  as ``trec_eval``'s ``ndcg_cut`` (linear gains, log2 discount, ties broken by document id
  descending) so it agrees with ``pytrec_eval`` / ``ir-measures``.
* :func:`leakage` — SPARSE paper eq. 13: the share of sensitive token instances of the
  victim sentences that the attacker recovers (in its top-k guesses, or probability ≥ a
  threshold).
* :func:`confidence` — SPARSE paper eq. 14: the mean probability the attacker assigns to
  those sensitive token instances.
* :func:`pearson`, :func:`spearman` — STS utility (correlation of similarities with gold
  scores).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

from ..errors import InvalidParameterError

__all__ = ["confidence", "dcg", "leakage", "ndcg_at_k", "ndcg_per_query", "pearson", "spearman"]


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain Σ g_i / log2(i + 1), ranks from 1 (Järvelin & Kekäläinen 2002)."""
    return float(sum(g / math.log2(i + 2) for i, g in enumerate(gains)))


def _ranked(scores: Mapping[str, float]) -> list[str]:
    """Documents in trec_eval order: score descending, ties by document id descending."""
    by_id = sorted(scores, reverse=True)
    return sorted(by_id, key=lambda d: -float(scores[d]))  # stable: keeps the id order on ties


def ndcg_per_query(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    k: int = 10,
) -> dict[str, float]:
    """NDCG@k of each query that has at least one relevant document in ``qrels``.

    Args:
        run: query id → {document id: score} (higher is better).
        qrels: query id → {document id: graded relevance}; relevance ≤ 0 counts as 0.
        k: cut-off.

    Returns:
        query id → NDCG@k; queries absent from ``run`` score 0.
    """
    if k < 1:
        raise InvalidParameterError("k", "an integer >= 1", k)
    out: dict[str, float] = {}
    for qid, judged in qrels.items():
        ideal = sorted((max(float(r), 0.0) for r in judged.values()), reverse=True)[:k]
        idcg = dcg(ideal)
        if idcg <= 0:
            continue
        ranked = _ranked(run.get(qid, {}))[:k]
        gains = [max(float(judged.get(d, 0)), 0.0) for d in ranked]
        out[qid] = dcg(gains) / idcg
    return out


def ndcg_at_k(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    k: int = 10,
) -> float:
    """Mean NDCG@k over the queries with a relevant document (see :func:`ndcg_per_query`)."""
    per_query = ndcg_per_query(run, qrels, k)
    if not per_query:
        raise InvalidParameterError("qrels", "at least one query with a relevant document", qrels)
    return float(np.mean(list(per_query.values())))


def _instance_probs(
    token_lists: Sequence[Sequence[str]], probabilities: Sequence[Mapping[str, float]]
) -> np.ndarray:
    if len(token_lists) != len(probabilities):
        raise InvalidParameterError("probabilities", f"{len(token_lists)} entries (one per sentence)",
                                    probabilities, note=f"got {len(probabilities)}")
    values = [float(probs.get(tok, 0.0)) for toks, probs in zip(token_lists, probabilities, strict=True)
              for tok in toks]
    return np.asarray(values, dtype=np.float64)


def _recovered_top_k(toks: Sequence[str], probs: Mapping[str, float]) -> list[bool]:
    k = len(set(toks))
    if k == 0:
        return []
    ranked = sorted(probs.items(), key=lambda kv: (-float(kv[1]), kv[0]))
    top = {t for t, p in ranked[:k] if float(p) > 0}
    return [t in top for t in toks]


def leakage(
    token_lists: Sequence[Sequence[str]],
    probabilities: Sequence[Mapping[str, float]],
    *,
    rule: str = "threshold",
    threshold: float = 0.5,
) -> float:
    """Share of sensitive token instances recovered (SPARSE paper, eq. 13).

    Leakage = Σ_s Σ_{t ∈ T(s)} 1[t recovered from s] / Σ_s |T(s)|, where T(s) are the
    sensitive token instances of victim sentence s (repeats count).

    "Recovered" follows ``rule``:

    * ``"top-k"`` (what the attackers of :mod:`private_vectors.eval.attacks` use by default): t is among the attacker's k_s highest-probability guesses for s,
      k_s = the number of distinct sensitive tokens of s (ties broken alphabetically; a
      probability of 0 is never a guess). Threshold-free, so a rare token that an attacker
      ranks first still counts, as in the multi-label inversion evaluation of Song &
      Raghunathan (2020).
    * ``"threshold"`` (this function's default): the attacker's probability for t is ≥ ``threshold``.

    Args:
        token_lists: the true sensitive tokens of each victim sentence.
        probabilities: per sentence, the attacker's {token: probability}; absent = 0.
        rule: ``"top-k"`` or ``"threshold"``.
        threshold: probability at which a token counts as recovered (``rule="threshold"``).

    Returns:
        A share in [0, 1]; NaN when there are no sensitive token instances.
    """
    if rule == "threshold":
        p = _instance_probs(token_lists, probabilities)
        return float(np.mean(p >= threshold)) if p.size else float("nan")
    if rule != "top-k":
        raise InvalidParameterError("rule", "'top-k' or 'threshold'", rule)
    _instance_probs(token_lists, probabilities)  # length check
    hits = [h for toks, probs in zip(token_lists, probabilities, strict=True)
            for h in _recovered_top_k(toks, probs)]
    return float(np.mean(hits)) if hits else float("nan")


def confidence(
    token_lists: Sequence[Sequence[str]], probabilities: Sequence[Mapping[str, float]]
) -> float:
    """Mean probability the attacker assigns to the true sensitive token instances (eq. 14)."""
    p = _instance_probs(token_lists, probabilities)
    return float(np.mean(p)) if p.size else float("nan")


def _pair(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=np.float64).ravel(), np.asarray(y, dtype=np.float64).ravel()
    if a.shape != b.shape or a.size < 2:
        raise InvalidParameterError("x, y", "two sequences of the same length >= 2", (a.size, b.size))
    return a, b


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation coefficient (NaN if either side is constant)."""
    a, b = _pair(x, y)
    if np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(stats.pearsonr(a, b)[0])


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (NaN if either side is constant)."""
    a, b = _pair(x, y)
    if np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(stats.spearmanr(a, b)[0])
