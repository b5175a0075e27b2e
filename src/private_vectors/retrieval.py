"""Noise-aware retrieval: query transforms and similarity that know where the noise is.

Concept-aware noise (a Mahalanobis Σ, see :mod:`private_vectors.mechanisms.mahalanobis`)
puts most of its variance in known directions. The stored vectors are what they are, but
the query side is post-processing — free under differential privacy — and can avoid the
noise the documents carry.

For the Mahalanobis mechanism Z = Y·Σ^½·U with Y ~ Gamma(n, θ), θ = unit/ε and U uniform on
the sphere, E[ZZᵀ] = E[Y²]·Σ/n = (n + 1)·θ²·Σ (SPARSE, Alg. 1; Xu et al. 2020). Along an
eigen-direction i of Σ the noise variance is therefore N_i = (n + 1)θ²λ_i.

Two transforms follow:

* **Wiener-style shrinkage** W(Σ, ε): scale the query along direction i by
  w_i = S_i / (S_i + N_i), with S_i the variance of clean document embeddings along i
  (default 1/n: unit-norm vectors spread evenly). This is the linear weighting that best
  estimates the clean score q·x from the noisy score (Wiener 1949); directions drowned in
  noise count little.
* **Projection** off the noisy subspace: the limit w_i ∈ {0, 1}. For a concept subspace V
  (Σ = a·VVᵀ + b·(I − VVᵀ)) it drops span V; for other Σ it drops the directions whose
  noise exceeds the signal (N_i > S_i).

``"auto"`` picks Wiener shrinkage for every non-spherical Σ: on SciFact with the default model
it matched or beat projection at every ε from 5 to 40 (benchmarks/space.py), since
projection also drops the clean signal in the noisy subspace, which matters once ε is large.

Both rescale the query back to its input norm (ranking under inner product or cosine does
not depend on the query's norm; L2 ranking does, so keeping it avoids surprises).
:func:`scores` ranks documents under the three Chroma/FAISS spaces.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from ._validation import as_float_matrix, check_choice, check_positive_finite
from .encoders.base import l2_normalize
from .errors import InvalidParameterError
from .mechanisms import MahalanobisMechanism, Mechanism

__all__ = [
    "QUERY_TRANSFORMS",
    "SPACES",
    "IdentityTransform",
    "ProjectionTransform",
    "QueryTransform",
    "WienerTransform",
    "build_query_transform",
    "is_spherical",
    "noise_directions",
    "scores",
    "top_k",
]

QUERY_TRANSFORMS = ("auto", "none", "project", "wiener")
SPACES = ("ip", "cosine", "l2")


class QueryTransform(abc.ABC):
    """A linear map applied to query embeddings only (never to stored vectors)."""

    name: str = "transform"

    def apply(self, Q: Any) -> np.ndarray:
        """Transform queries (n,) or (m, n); returns float32 of the same shape."""
        mat, single = as_float_matrix(Q, "queries")
        out = self._apply(mat)
        in_norm = np.linalg.norm(mat, axis=1, keepdims=True)
        out_norm = np.linalg.norm(out, axis=1, keepdims=True)
        safe = np.where(out_norm > 0, out_norm, 1.0)
        out = np.where(out_norm > 0, out * (in_norm / safe), out)
        out32 = out.astype(np.float32)
        return out32[0] if single else out32

    @abc.abstractmethod
    def _apply(self, Q: np.ndarray) -> np.ndarray:
        """Transform a validated float64 (m, n) matrix."""

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """JSON-safe summary for the privacy report."""


class IdentityTransform(QueryTransform):
    """No change (spherical mechanisms: there is no direction to avoid)."""

    name = "none"

    def _apply(self, Q: np.ndarray) -> np.ndarray:
        return Q.copy()

    def describe(self) -> dict[str, Any]:
        return {"query_transform": "none", "effect": "queries used as embedded"}


class ProjectionTransform(QueryTransform):
    """q ↦ q − (qV)Vᵀ: drop the query's component in the noisy subspace span(V).

    Args:
        basis: V, shape (n, k), k < n (orthonormalised here).
    """

    name = "project"

    def __init__(self, basis: Any) -> None:
        V, _ = as_float_matrix(basis, "basis")
        if V.shape[1] >= V.shape[0]:
            raise InvalidParameterError("basis", "shape (n, k) with k < n", basis)
        self.basis, _ = np.linalg.qr(V)

    def _apply(self, Q: np.ndarray) -> np.ndarray:
        if Q.shape[1] != self.basis.shape[0]:
            raise InvalidParameterError("queries", f"vectors of dimension {self.basis.shape[0]}", Q)
        return Q - (Q @ self.basis) @ self.basis.T

    def describe(self) -> dict[str, Any]:
        return {"query_transform": "project", "removed_rank": int(self.basis.shape[1]),
                "dim": int(self.basis.shape[0]),
                "effect": f"query component in the {self.basis.shape[1]}-dimensional noisy subspace removed"}


class WienerTransform(QueryTransform):
    """q ↦ U·diag(w)·Uᵀq (plus ``rest_weight`` outside span U), w_i = S/(S + N_i).

    Args:
        noise_variance: N_i per direction, shape (r,).
        directions: U, shape (n, r), orthonormal columns; r < n means the remaining
            directions all have noise ``rest_noise``.
        rest_noise: noise variance outside span U (ignored when r = n).
        signal_variance: S, the clean documents' variance per direction (default 1/n).
    """

    name = "wiener"

    def __init__(self, noise_variance: Any, directions: Any, *, rest_noise: float | None = None,
                 signal_variance: float | None = None) -> None:
        N = np.asarray(noise_variance, dtype=np.float64).ravel()
        U, _ = as_float_matrix(directions, "directions")
        if U.shape[1] != N.size:
            raise InvalidParameterError("directions", f"{N.size} columns (one per noise variance)", U)
        if not np.all(np.isfinite(N)) or np.any(N < 0):
            raise InvalidParameterError("noise_variance", "finite values >= 0", noise_variance)
        n = U.shape[0]
        self.signal_variance = (1.0 / n if signal_variance is None
                                else check_positive_finite(signal_variance, "signal_variance"))
        self.directions = U
        self.weights = self.signal_variance / (self.signal_variance + N)
        if N.size < n:
            if rest_noise is None:
                raise InvalidParameterError("rest_noise", "a noise variance for the remaining directions", None)
            self.rest_weight = float(self.signal_variance / (self.signal_variance + float(rest_noise)))
        else:
            self.rest_weight = 1.0

    def _apply(self, Q: np.ndarray) -> np.ndarray:
        U = self.directions
        if Q.shape[1] != U.shape[0]:
            raise InvalidParameterError("queries", f"vectors of dimension {U.shape[0]}", Q)
        coeff = Q @ U
        return self.rest_weight * Q + (coeff * (self.weights - self.rest_weight)) @ U.T

    def describe(self) -> dict[str, Any]:
        return {"query_transform": "wiener", "signal_variance": self.signal_variance,
                "weight_range": [float(min(self.weights.min(), self.rest_weight)),
                                 float(max(self.weights.max(), self.rest_weight))],
                "effect": "query shrunk per direction by signal/(signal + noise)"}


def noise_directions(mechanism: Mechanism) -> tuple[np.ndarray, np.ndarray, float | None] | None:
    """Per-direction noise variance of a mechanism, or None when it is spherical/unknown.

    Returns:
        ``(N, U, rest)``: variances N (r,), orthonormal directions U (n, r), and the variance
        of every direction outside span U (None when r = n). N_i = (n + 1)·(unit/ε)²·λ_i.
    """
    if not isinstance(mechanism, MahalanobisMechanism):
        return None
    n = int(mechanism.dim or 0)
    scale2 = (n + 1) * (mechanism.unit / mechanism.epsilon) ** 2
    vals, vecs = mechanism.principal_directions()
    if mechanism.form == "subspace":  # k directions of V at variance a; all others share b
        return np.asarray(vals) * scale2, np.asarray(vecs), float(mechanism.floor_variance) * scale2
    return np.asarray(vals) * scale2, np.asarray(vecs), None


def is_spherical(mechanism: Mechanism) -> bool:
    """Whether ``mechanism`` adds the same noise in every direction (no query transform applies)."""
    nd = noise_directions(mechanism)
    if nd is None:
        return True
    N, _, rest = nd
    allv = N if rest is None else np.append(N, rest)
    return bool(np.allclose(allv, allv.mean(), rtol=1e-6))


def build_query_transform(kind: str, mechanism: Mechanism, *, subspace: Any = None,
                          signal_variance: float | None = None) -> QueryTransform:
    """The query transform ``kind`` for documents perturbed by ``mechanism``.

    Args:
        kind: ``"auto"`` (Wiener shrinkage for a non-spherical Σ — concept subspace, mask
            or full —, identity for spherical mechanisms; measured in benchmarks/space.py),
            ``"none"``, ``"project"`` or ``"wiener"``.
        mechanism: the documents' mechanism.
        subspace: a concept's noise subspace V (n, k) (``FittedConcept.noise_subspace()``),
            used when the mechanism itself is not in subspace form.
        signal_variance: S for the Wiener weights (default 1/n).
    """
    check_choice(kind, "query_transform", QUERY_TRANSFORMS)
    if kind == "none":
        return IdentityTransform()
    nd = noise_directions(mechanism)
    if kind == "auto":
        if nd is None or is_spherical(mechanism):
            return IdentityTransform()
        kind = "wiener"
    if nd is None:
        raise InvalidParameterError("query_transform", "'none' or 'auto' for a mechanism without a noise "
                                    "covariance (Laplace, Purkayastha, Gaussian, learned)", kind)
    N, U, rest = nd
    if kind == "wiener":
        return WienerTransform(N, U, rest_noise=rest, signal_variance=signal_variance)
    # projection
    if isinstance(mechanism, MahalanobisMechanism) and mechanism.form == "subspace":
        return ProjectionTransform(mechanism.basis)
    if subspace is not None:
        return ProjectionTransform(subspace)
    S = 1.0 / U.shape[0] if signal_variance is None else float(signal_variance)
    noisy = N > S
    if noisy.all() or not noisy.any():  # nothing sensible to drop by SNR: drop above-average noise
        noisy = N.mean() < N
    if not noisy.any():
        return IdentityTransform()
    return ProjectionTransform(U[:, noisy])


def scores(Q: Any, D: Any, space: str = "ip") -> np.ndarray:
    """Similarity of queries to documents under a vector-store space (higher = closer).

    Args:
        Q: queries (m, n). D: stored documents (d, n).
        space: ``"ip"`` (q·z), ``"cosine"`` (q·z/‖q‖‖z‖) or ``"l2"`` (−‖q − z‖²).
    """
    Qm, _ = as_float_matrix(Q, "Q")
    Dm, _ = as_float_matrix(D, "D", dim=Qm.shape[1])
    if space == "ip":
        return Qm @ Dm.T
    if space == "cosine":
        return l2_normalize(Qm) @ l2_normalize(Dm).T
    if space == "l2":
        return -(np.sum(Qm**2, axis=1, keepdims=True) + np.sum(Dm**2, axis=1)[None, :] - 2 * Qm @ Dm.T)
    raise InvalidParameterError("space", f"one of {SPACES}", space)


def top_k(Q: Any, D: Any, k: int = 10, space: str = "ip") -> np.ndarray:
    """Indices (m, k) of the k best documents per query under ``space``."""
    s = scores(Q, D, space)
    k = min(k, s.shape[1])
    idx = np.argpartition(-s, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(s, idx, axis=1), axis=1)
    return np.take_along_axis(idx, order, axis=1)


# -- store geometry: stored vectors that rank the same in every store space ---------------------
STORE_GEOMETRIES = ("auto", "normalize", "augment", "none")
"""How documents are post-processed so that l2, cosine and ip stores rank alike
(benchmarks/space_invariance.py)."""

_AUGMENT_PROBES = 256
_AUGMENT_MARGIN = 1.25


def augment_bound(mechanism: Mechanism, dim: int) -> float:
    """M for the inner-product-to-nearest-neighbour augmentation: 1.25 × the largest norm of
    256 perturbed random unit vectors (a fixed probe; seeded: this noise is never stored)."""
    rng = np.random.default_rng(0)
    X = l2_normalize(rng.standard_normal((_AUGMENT_PROBES, dim)))
    Z = np.atleast_2d(np.asarray(mechanism.perturb(X, rng=np.random.default_rng(1)), dtype=np.float64))
    return float(_AUGMENT_MARGIN * max(1.0, float(np.linalg.norm(Z, axis=1).max())))


def geometry_documents(Z: np.ndarray, kind: str, bound: float | None = None) -> tuple[np.ndarray, int]:
    """Stored form of perturbed documents ``Z`` (post-processing: the guarantee is unchanged).

    ``"normalize"``: unit rows, so ‖q − z‖² = ‖q‖² + 1 − 2q·z and q·z/‖z‖ = q·z: every space
    ranks as cosine. ``"augment"`` (Bachrach et al. 2014, Xbox recommender, Euclidean
    transformation for inner-product spaces): z ↦ [z, √(M² − ‖z‖²)] with queries [q, 0], so every
    stored row has norm M and every space ranks as q·z. Returns (rows, how many rows exceeded M
    and were clipped to an extra coordinate of 0).
    """
    Z = np.asarray(Z, dtype=np.float64)
    if kind == "normalize":
        return l2_normalize(Z), 0
    if kind == "augment":
        if bound is None:
            raise InvalidParameterError("bound", "M for store_geometry='augment'", bound)
        sq = bound**2 - np.sum(Z**2, axis=1)
        return np.hstack([Z, np.sqrt(np.maximum(sq, 0.0))[:, None]]), int(np.sum(sq < 0))
    return Z, 0


def geometry_queries(Q: np.ndarray, kind: str) -> np.ndarray:
    """Query form for a store written with ``geometry_documents(…, kind)`` (augment: a 0 appended)."""
    Q = np.asarray(Q, dtype=np.float64)
    if kind == "augment":
        return np.hstack([Q, np.zeros((Q.shape[0], 1))])
    return Q


def strip_geometry(V: np.ndarray, kind: str) -> np.ndarray:
    """Stored (or query) rows without the augmentation coordinate (what the mechanism produced,
    up to the normalization that ``"normalize"`` applied)."""
    V = np.asarray(V)
    return V[:, :-1] if kind == "augment" else V
