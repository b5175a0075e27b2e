"""Attribute probes: classifiers retrained on (erased) vectors, scored on held-out ones.

A fitted :class:`~private_vectors.fitted.attribute.AttributeConcept` records what they read
on its held-out split; the evaluation harness uses the same probes as its attribute attackers
(:mod:`private_vectors.eval.attacks.attribute`), so a concept's recorded figure and the
harness's agree.

The attacker knows the attribute for some stored records and trains a classifier on their
(protected) vectors; it is scored on other stored records. With ``groups`` (e.g. the
protected text) the folds never split a group, so an identical vector is never both
trained on and scored.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import as_float_matrix, check_int
from ..errors import InvalidParameterError

__all__ = ["ATTRIBUTE_ATTACKERS", "attribute_attack", "majority_rate", "wilson_interval"]

ATTRIBUTE_ATTACKERS = ("logistic", "mlp", "knn")


def wilson_interval(correct: int, total: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion (Wilson 1927), 95% by default."""
    if total <= 0:
        return (0.0, 1.0)
    p = correct / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def _classifier(kind: str, seed: int) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "logistic":
        return make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=3000))
    if kind == "mlp":
        return make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(256,), alpha=1e-2, max_iter=400,
                                                             early_stopping=True, validation_fraction=0.15,
                                                             n_iter_no_change=10, random_state=seed))
    if kind == "knn":
        from sklearn.neighbors import KNeighborsClassifier

        return KNeighborsClassifier(n_neighbors=25, metric="cosine")
    raise InvalidParameterError("attacker", f"one of {', '.join(ATTRIBUTE_ATTACKERS)}", kind)


def _folds(m: int, groups: np.ndarray | None, k: int, seed: int) -> list[np.ndarray]:
    """k test-index folds; whole groups stay together."""
    rng = np.random.default_rng(seed)
    if groups is None:
        groups = np.arange(m)
    uniq = np.unique(groups)
    rng.shuffle(uniq)
    fold_of = {g: i % k for i, g in enumerate(uniq)}
    labels = np.asarray([fold_of[g] for g in groups])
    return [np.flatnonzero(labels == i) for i in range(k)]


def attribute_attack(X: Any, z: Any, *, attacker: str = "logistic", groups: Any = None, folds: int = 5,
                     random_state: int = 0) -> dict[str, float]:
    """Cross-validated accuracy of an attacker retrained on protected vectors.

    Args:
        X: protected vectors (m, n) (or features, e.g. a one-hot diagnosis for a reference).
        z: the attribute (m,).
        attacker: ``"logistic"`` (standardised, L2, C = 0.1), ``"mlp"`` (one hidden layer of
            256, early stopping) or ``"knn"`` (25 nearest neighbours, cosine: the memorising attacker).
        groups: optional group ids (m,) kept within one fold.
        folds: k of k-fold cross-validation (every record is scored once, by a model that
            never saw it or its group).
        random_state: fold assignment and MLP initialisation.

    Returns:
        ``{"accuracy", "ci_low", "ci_high", "n", "majority"}`` (Wilson 95% interval; majority =
        accuracy of always guessing each training fold's most frequent class).
    """
    mat, _ = as_float_matrix(X, "X")
    labels = np.asarray(list(z))
    if len(labels) != len(mat):
        raise InvalidParameterError("z", f"{len(mat)} labels", z, note=f"got {len(labels)}")
    k = check_int(folds, "folds", minimum=2)
    grp = None if groups is None else np.asarray(list(groups))
    correct = majority = 0
    for test in _folds(len(mat), grp, k, random_state):
        train = np.setdiff1d(np.arange(len(mat)), test)
        if len(test) == 0 or len(np.unique(labels[train])) < 2:
            continue
        clf = _classifier(attacker, random_state)
        clf.fit(mat[train], labels[train])
        correct += int(np.sum(clf.predict(mat[test]) == labels[test]))
        vals, counts = np.unique(labels[train], return_counts=True)
        majority += int(np.sum(labels[test] == vals[np.argmax(counts)]))
    n = len(mat)
    lo, hi = wilson_interval(correct, n)
    return {"accuracy": correct / n, "ci_low": lo, "ci_high": hi, "n": float(n), "majority": majority / n}


def majority_rate(z: Any) -> float:
    """Share of the most frequent class."""
    _, counts = np.unique(np.asarray(list(z)), return_counts=True)
    return float(counts.max() / counts.sum())
