"""Metrics: NDCG cross-checked against ir-measures (pytrec_eval); leakage/confidence by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from private_vectors.errors import InvalidParameterError
from private_vectors.eval.metrics import (
    confidence,
    leakage,
    ndcg_at_k,
    ndcg_per_query,
    pearson,
    spearman,
)


def test_ndcg_hand_computed():
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    qrels = {"q": {"b": 2, "c": 1, "z": 1}}
    dcg = 2 / math.log2(3) + 1 / math.log2(4)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(run, qrels, k=10) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(run, qrels, k=1) == 0.0


def _random_case(rng: np.random.Generator, n_q: int = 30, n_d: int = 60):
    run, qrels = {}, {}
    for q in range(n_q):
        docs = [f"d{j}" for j in rng.choice(n_d, size=25, replace=False)]
        # rounded scores create ties, exercising the tie-break rule
        run[f"q{q}"] = {d: float(np.round(rng.random(), 1)) for d in docs}
        judged = rng.choice(n_d, size=6, replace=False)
        qrels[f"q{q}"] = {f"d{j}": int(rng.integers(0, 3)) for j in judged}
        qrels[f"q{q}"][f"d{judged[0]}"] = 2  # at least one relevant
    return run, qrels


@pytest.mark.parametrize("k", [1, 5, 10])
def test_ndcg_matches_ir_measures(k):
    ir_measures = pytest.importorskip("ir_measures")
    run, qrels = _random_case(np.random.default_rng(k))
    measure = ir_measures.nDCG @ k
    theirs = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
    ours = ndcg_per_query(run, qrels, k)
    assert set(ours) == set(theirs)
    for q in ours:
        assert ours[q] == pytest.approx(theirs[q], abs=1e-4)
    assert ndcg_at_k(run, qrels, k) == pytest.approx(ir_measures.calc_aggregate([measure], qrels, run)[measure],
                                                     abs=1e-4)


def test_ndcg_missing_query_counts_zero_and_bad_k():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    assert ndcg_at_k({"q1": {"a": 1.0}}, qrels) == pytest.approx(0.5)
    with pytest.raises(InvalidParameterError):
        ndcg_at_k({}, qrels, k=0)


def test_leakage_and_confidence_hand_made():
    truth = [["alice", "paris"], ["bob"], ["alice"]]
    probs = [{"alice": 0.9, "paris": 0.2, "bob": 0.99}, {"bob": 0.5}, {}]
    # threshold rule: alice (0.9) and bob (0.5 >= 0.5) recovered; paris (0.2) and the last alice (0) not
    assert leakage(truth, probs, rule="threshold") == pytest.approx(2 / 4)
    assert leakage(truth, probs, rule="threshold", threshold=0.6) == pytest.approx(1 / 4)
    # top-k rule: sentence 1 has k=2 -> guesses {bob, alice}: alice yes, paris no; bob yes; {} -> no
    assert leakage(truth, probs, rule="top-k") == pytest.approx(2 / 4)
    # a low-probability token that the attacker ranks first counts under top-k only
    low = [{"paris": 0.2, "rome": 0.1}]
    assert leakage([["paris"]], low, rule="top-k") == 1.0
    assert leakage([["paris"]], low, rule="threshold") == 0.0
    assert leakage([["rome"]], low, rule="top-k") == 0.0
    assert confidence(truth, probs) == pytest.approx((0.9 + 0.2 + 0.5 + 0.0) / 4)
    # repeated tokens count as separate instances
    assert leakage([["x", "x", "y"]], [{"x": 1.0}], rule="threshold") == pytest.approx(2 / 3)
    assert leakage([["x", "x", "y"]], [{"x": 1.0}], rule="top-k") == pytest.approx(2 / 3)
    assert math.isnan(leakage([[]], [{}]))
    with pytest.raises(InvalidParameterError):
        leakage(truth, probs[:2])
    with pytest.raises(InvalidParameterError):
        leakage(truth, probs, rule="best")


def test_correlations():
    x = np.arange(10.0)
    assert pearson(x, 2 * x + 1) == pytest.approx(1.0)
    assert spearman(x, x**3) == pytest.approx(1.0)
    assert pearson(x, -x) == pytest.approx(-1.0)
    assert math.isnan(pearson(x, np.ones(10)))
    with pytest.raises(InvalidParameterError):
        pearson([1.0], [2.0])
