"""TextCrafter's PII classifier p_Φ (paper eqs. 5–8) and the data it is trained on: sentences
relabelled by a detector (:func:`relabel_pii`), a class-balanced subsample, and the k-means
cluster prior of the reward (:func:`kmeans`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import as_float_matrix, check_int, check_non_negative_finite, check_texts
from ..errors import InvalidParameterError
from .learned import NotFittedError

__all__ = ["PIIClassifier", "balanced_indices", "kmeans", "relabel_pii"]


def _binary_labels(labels: Any, m: int) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.shape[0] != m:
        raise InvalidParameterError("y", f"a 1-d array of {m} binary labels (1 = contains PII)", labels)
    if not np.isin(arr, [0, 1, True, False]).all():
        raise InvalidParameterError("y", "labels in {0, 1}", labels)
    out = arr.astype(np.int64)
    if out.min() == out.max():
        raise InvalidParameterError("y", "both classes (PII and plain) present", labels)
    return out


def relabel_pii(texts: Sequence[str], labels: Any, detector: Any) -> tuple[np.ndarray, int]:
    """Relabel plain (0) sentences that contain PII as PII (1) — TextCrafter eqs. 5–8.

    Args:
        texts: the sentences.
        labels: their source labels (1 = from a PII source, 0 = "plain").
        detector: anything with ``contains_pii(text)``, e.g. :class:`private_vectors.text.light.LightDetector`
            (passed in: the mechanisms sit below the text stage).

    Returns:
        The corrected labels and how many were flipped.
    """
    items = check_texts(texts)
    y = np.asarray(labels)
    if y.ndim != 1 or y.shape[0] != len(items) or not np.isin(y, [0, 1]).all():
        raise InvalidParameterError("labels", f"{len(items)} labels in {{0, 1}}", labels)
    y = y.astype(np.int64)
    out = y.copy()
    for i, text in enumerate(items):
        if out[i] == 0 and detector.contains_pii(text):
            out[i] = 1
    return out, int((out != y).sum())


def balanced_indices(y: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """Indices of a class-balanced subsample (the larger class is subsampled)."""
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    k = min(len(pos), len(neg))
    return np.sort(np.concatenate([gen.choice(pos, k, replace=False), gen.choice(neg, k, replace=False)]))


def kmeans(X: np.ndarray, k: int, gen: np.random.Generator, iters: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Plain Lloyd k-means with k-means++ seeding; returns (centroids, assignment)."""
    m = X.shape[0]
    k = min(k, m)
    centroids = [X[gen.integers(m)]]
    for _ in range(1, k):
        d2 = np.min(((X[:, None, :] - np.asarray(centroids)[None]) ** 2).sum(-1), axis=1)
        p = d2 / d2.sum() if d2.sum() > 0 else np.full(m, 1.0 / m)
        centroids.append(X[gen.choice(m, p=p)])
    C = np.asarray(centroids, dtype=np.float64)
    assign = np.zeros(m, dtype=np.int64)
    for _ in range(iters):
        d2 = (X**2).sum(1)[:, None] - 2 * X @ C.T + (C**2).sum(1)[None]
        new = d2.argmin(1)
        for j in range(k):
            members = X[new == j]
            if len(members):
                C[j] = members.mean(0)
        if np.array_equal(new, assign):
            break
        assign = new
    return C, assign


def _logistic_newton(X: np.ndarray, y: np.ndarray, l2: float, max_iter: int) -> tuple[np.ndarray, float]:
    """L2-penalised logistic regression by Newton's method (IRLS); the intercept is not penalised.

    Minimises mean BCE(σ(Xw + b), y) + l2·‖w‖².
    """
    m, n = X.shape
    A = np.hstack([X, np.ones((m, 1))])
    theta = np.zeros(n + 1)
    reg = np.full(n + 1, 2.0 * l2)
    reg[-1] = 1e-10
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-np.clip(A @ theta, -35, 35)))
        grad = A.T @ (p - y) / m + reg * theta
        H = (A * (p * (1 - p))[:, None]).T @ A / m + np.diag(reg)
        step = np.linalg.solve(H, grad)
        theta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return theta[:n].copy(), float(theta[n])


class PIIClassifier:
    """Logistic regression p_Φ(PII | embedding), fitted by Newton's method (IRLS) in numpy.

    Args:
        l2: L2 penalty on the weights.
        max_iter: Newton iterations (it converges in a handful).
        balanced: subsample the larger class so both classes are equally represented.

    Attributes (after fit): coef_ (n,), intercept_ (float), n_features_in_.
    """

    def __init__(self, *, l2: float = 1e-3, max_iter: int = 50, balanced: bool = True) -> None:
        self.l2 = check_non_negative_finite(l2, "l2")
        self.max_iter = check_int(max_iter, "max_iter", minimum=1)
        self.balanced = bool(balanced)
        self.coef_: np.ndarray | None = None
        self.intercept_: float = 0.0
        self.n_features_in_: int | None = None

    def fit(self, X: Any, y: Any, *, random_state: Any = None) -> PIIClassifier:
        """Fit on embeddings ``X`` (m, n) and binary labels ``y`` (1 = contains PII)."""
        mat, _ = as_float_matrix(X, "X")
        yy = _binary_labels(y, mat.shape[0])
        if self.balanced:
            seed = random_state if isinstance(random_state, int) else None
            idx = balanced_indices(yy, np.random.default_rng(seed))
            mat, yy = mat[idx], yy[idx]
        w, b = _logistic_newton(mat, yy.astype(np.float64), self.l2, self.max_iter)
        self.coef_ = w
        self.intercept_ = b
        self.n_features_in_ = mat.shape[1]
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """p_Φ(PII | x) for each row of ``X``."""
        if self.coef_ is None:
            raise NotFittedError("PIIClassifier is not fitted yet: call fit() first")
        mat, single = as_float_matrix(X, "X", dim=self.n_features_in_)
        p = 1.0 / (1.0 + np.exp(-(mat @ self.coef_ + self.intercept_)))
        return p[0] if single else p

    def score(self, X: Any, y: Any) -> float:
        """Accuracy at threshold 0.5."""
        pred = np.atleast_1d(self.predict_proba(X)) >= 0.5
        return float(np.mean(pred == np.asarray(y).astype(bool)))
