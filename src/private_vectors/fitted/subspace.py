"""Concept subspaces: a low-rank V for the full covariance Σ = a·VVᵀ + b·(I − VVᵀ).

Beyond the SPARSE paper. A diagonal mask finds the dimensions a *presence* classifier
uses ("a name is here"); an inversion attacker reads *which* name. Measured on MiniLM
(issue 3), putting 90% of the noise trace on the top directions of the concept-value class
means of Φ(s) − Φ(R(s)) cut attacker leakage far below both the mask and spherical Laplace.

Three ways to estimate V (n, k):

* ``"class_means"`` (default): for each removed concept value v, the mean of the paired
  differences dᵢ = Φ(sᵢ) − Φ(R(sᵢ)) over the sentences that contained v; V = the top-k right
  singular vectors of the (uncentred) matrix of class means, so the shared "presence"
  direction and the value-specific ones both count. When there are fewer usable classes than
  k, the remaining directions come from the PCA of the differences projected off those found.
* ``"probe"``: a linear attribute probe — ridge regression of the one-hot removed value on
  the centred Φ(s) (filters W, (n, classes)); V = the top-k left singular vectors of its
  activation patterns A = Cov(Φ)·W (Haufe et al. 2014, NeuroImage 87), i.e. the directions in
  which the values are encoded (raw filters are dominated by estimation noise), padded like above.
* ``"pca"``: top-k right singular vectors of the (uncentred) differences dᵢ — needs no groups.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import check_int, check_positive_finite, check_probability
from ..errors import InvalidParameterError, InvalidTypeError
from .mask import check_pairs

__all__ = ["SUBSPACE_METHODS", "ConceptSubspace"]

log = logging.getLogger(__name__)

SUBSPACE_METHODS = ("class_means", "probe", "pca")


def _top_right(M: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k right singular vectors (n, k) and singular values of M (rows × n)."""
    if M.shape[0] == 0 or k <= 0:
        return np.zeros((M.shape[1], 0)), np.zeros(0)
    _, s, vt = np.linalg.svd(M, full_matrices=False)
    keep = min(k, int(np.sum(s > 1e-10 * max(1.0, s[0]))))
    return vt[:keep].T, s[:keep]


def _pad_with_residual_pca(V: np.ndarray, D: np.ndarray, k: int) -> np.ndarray:
    """Extend orthonormal V (n, j) to k columns with the top PCA directions of D off span(V)."""
    if V.shape[1] >= k:
        return V[:, :k]
    R = D - (D @ V) @ V.T if V.shape[1] else D
    extra, _ = _top_right(R, k - V.shape[1])
    W = np.concatenate([V, extra], axis=1)
    Q, _ = np.linalg.qr(W)
    return Q


def _group_index(groups: Sequence[Any], m: int, min_size: int) -> dict[str, list[int]]:
    if len(groups) != m:
        raise InvalidParameterError("groups", f"one entry per pair ({m})", groups)
    index: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        values = (g,) if isinstance(g, str) or not isinstance(g, (list, tuple, set, frozenset)) else g
        for v in values:
            if v is not None and str(v).strip():
                index[str(v).strip()].append(i)
    return {v: rows for v, rows in index.items() if len(rows) >= min_size}


class ConceptSubspace:
    """Estimate the concept subspace V (n, k) for Σ = a·VVᵀ + b·(I − VVᵀ).

    Args:
        rank: k, number of directions (default 64, the issue's MiniLM prototype); must be < n.
        share: fraction of the noise trace put on span(V), in (0, 1) (default 0.9). Stored
            for the mechanism (:meth:`MahalanobisMechanism.from_subspace`); fitting ignores it.
        method: ``"class_means"`` (default), ``"probe"`` or ``"pca"`` — see the module docstring.
        min_group_size: a concept value needs at least this many sentences to form a class.
        ridge: probe regularisation, relative to the mean eigenvalue of the covariance.

    Attributes:
        basis_: (n, k) orthonormal columns, most important first.
        method_: the method actually used (``"pca"`` when groups were missing).
        n_classes_: number of concept-value classes used (0 for PCA).
        explained_: share of the differences' energy ‖D‖²_F inside span(V).
    """

    def __init__(
        self,
        *,
        rank: int = 64,
        share: float = 0.9,
        method: str = "class_means",
        min_group_size: int = 1,
        ridge: float = 1e-2,
    ) -> None:
        self.rank = rank
        self.share = share
        self.method = method
        self.min_group_size = min_group_size
        self.ridge = ridge

    def get_params(self) -> dict[str, Any]:
        return {"rank": self.rank, "share": self.share, "method": self.method,
                "min_group_size": self.min_group_size, "ridge": self.ridge}

    def fit(self, pos: Any, neg: Any, groups: Sequence[Any] | None = None) -> ConceptSubspace:
        """Estimate V from paired embeddings.

        Args:
            pos: Φ(s), shape (m, n).
            neg: Φ(R(s, C)), shape (m, n), paired row by row.
            groups: per pair, the removed concept value(s) (a str or a tuple of str), needed by
                ``"class_means"`` and ``"probe"``; without them the PCA method is used (logged).

        Returns:
            self, with ``basis_`` set.
        """
        P, N = check_pairs(pos, neg)
        m, n = P.shape
        k = check_int(self.rank, "rank", minimum=1)
        if k >= n:
            raise InvalidParameterError("rank", f"an integer < the embedding dimension {n}", self.rank)
        check_probability(self.share, "share")
        check_positive_finite(self.ridge, "ridge")
        min_size = check_int(self.min_group_size, "min_group_size", minimum=1)
        if self.method not in SUBSPACE_METHODS:
            raise InvalidParameterError("method", f"one of {', '.join(SUBSPACE_METHODS)}", self.method)
        method = self.method
        if method != "pca" and groups is None:
            log.warning("ConceptSubspace(method=%r) got no groups; using the PCA of the differences", method)
            method = "pca"
        if groups is not None and isinstance(groups, (str, bytes)):
            raise InvalidTypeError("groups", "a sequence with one entry per pair", groups)
        D = P - N
        self.n_classes_ = 0
        if method == "pca":
            V, _ = _top_right(D, k)
        else:
            index = _group_index(list(groups or []), m, min_size)
            self.n_classes_ = len(index)
            V = self._class_means(D, index, k) if method == "class_means" else self._probe(P, index, k)
        V = _pad_with_residual_pca(V, D, k)
        if V.shape[1] < k:
            log.warning("ConceptSubspace: only %d directions could be estimated (rank %d asked)", V.shape[1], k)
        self.basis_ = np.ascontiguousarray(V)
        self.method_ = method
        total = float(np.sum(D**2))
        self.explained_ = float(np.sum((D @ V) ** 2) / total) if total > 0 else 0.0
        self.n_features_in_ = n
        return self

    @staticmethod
    def _class_means(D: np.ndarray, index: dict[str, list[int]], k: int) -> np.ndarray:
        if not index:
            return np.zeros((D.shape[1], 0))
        means = np.stack([D[rows].mean(axis=0) for rows in index.values()])
        V, _ = _top_right(means, k)
        return V

    def _probe(self, P: np.ndarray, index: dict[str, list[int]], k: int) -> np.ndarray:
        if not index:
            return np.zeros((P.shape[1], 0))
        Y = np.zeros((P.shape[0], len(index)))
        for j, rows in enumerate(index.values()):
            Y[rows, j] = 1.0
        X = P - P.mean(axis=0)
        Y -= Y.mean(axis=0)
        C = X.T @ X / X.shape[0]
        lam = self.ridge * float(np.trace(C)) / C.shape[0]
        W = np.linalg.solve(C + lam * np.eye(C.shape[0]), X.T @ Y / X.shape[0])  # (n, classes) filters
        A = C @ W  # activation patterns (Haufe et al. 2014): where the attribute is encoded
        V, _ = _top_right(A.T, k)
        return V
