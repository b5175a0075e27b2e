"""Mahalanobis mechanism (SPARSE, Alg. 1; Xu et al. 2020).

Density p(z | x) ∝ exp(−ε‖z − x‖_M / unit) with ‖v‖_M = √(vᵀΣ⁻¹v). Sampling:
Z = Y·Σ^½·X with Y ~ Gamma(n, unit/ε) and X uniform on the unit sphere. Since
‖Σ^½X‖_M = 1, ‖Z‖_M = Y exactly, and E‖Z‖₂² = E[Y²]·tr(Σ)/n, so with tr Σ = n the
total noise equals the spherical Laplace mechanism's at the same ε.

Σ comes in three forms, each applied without ever forming more than needed:

* a diagonal (a vector, e.g. a SPARSE neuron mask m): Σ = diag(m + δ), δ = 1e-6,
  trace normalised to n (paper §3.2);
* a full positive-definite matrix, square-rooted once through a cached
  eigendecomposition;
* a concept subspace (:meth:`MahalanobisMechanism.from_subspace`):
  Σ = a·VVᵀ + b·(I − VVᵀ) with V (n, k) orthonormal and ``share`` of the trace on V.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import as_float_matrix, check_positive_finite, check_probability
from ..errors import InvalidParameterError, InvalidTypeError
from ..random import RandomSource
from .base import Mechanism, add_radial_noise

__all__ = ["MASK_FLOOR", "MahalanobisMechanism"]

MASK_FLOOR = 1e-6
"""δ added to a diagonal mask before normalisation (SPARSE, §3.2)."""


class MahalanobisMechanism(Mechanism):
    """Elliptical Laplace noise, ε-metric-LDP in the Mahalanobis norm of Σ.

    Args:
        epsilon: privacy parameter per ``unit`` of Mahalanobis distance, finite and > 0.
        sigma: a diagonal (shape (n,), non-negative, e.g. a neuron mask) or a full
            symmetric positive-definite matrix (n, n).
        unit: distance unit (default 1.0).
        normalize_trace: rescale Σ to trace n (default True; the paper's choice, which
            makes the total noise equal to Laplace at the same ε).
        random_state: None (secure) or an explicit seed / Generator (tests only).
    """

    name = "mahalanobis"
    metric = "mahalanobis"
    _additive = True

    _form: str
    _n: int
    _diag: np.ndarray  # diagonal form: diag(Σ)
    _sqrt_diag: np.ndarray
    _eig: tuple[np.ndarray, np.ndarray] | None  # dense form: eigenvalues, eigenvectors
    _sqrt: np.ndarray  # dense form: Σ^½ (float32)
    _basis: np.ndarray | None  # subspace form: orthonormal V
    _basis32: np.ndarray
    _ab: tuple[float, float]  # subspace form: variance inside / outside span V
    _share: float

    def __init__(
        self,
        *,
        epsilon: float,
        sigma: Any,
        unit: float = 1.0,
        normalize_trace: bool = True,
        random_state: Any = None,
    ) -> None:
        self.epsilon = check_positive_finite(epsilon, "epsilon")
        self.unit = check_positive_finite(unit, "unit")
        if not isinstance(normalize_trace, bool):
            raise InvalidTypeError("normalize_trace", "a bool", normalize_trace)
        self.normalize_trace = normalize_trace
        self._basis: np.ndarray | None = None
        self._set_sigma(sigma)
        super().__init__(dim=self._n, random_state=random_state)

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_subspace(
        cls,
        *,
        epsilon: float,
        basis: Any,
        share: float = 0.9,
        unit: float = 1.0,
        random_state: Any = None,
    ) -> MahalanobisMechanism:
        """Σ = a·VVᵀ + b·(I − VVᵀ), with ``share`` of the trace n on span(V).

        Args:
            epsilon: privacy parameter per ``unit``.
            basis: V, shape (n, k), k < n; orthonormalised here (QR).
            share: fraction of the trace (total noise variance) put on span(V), in (0, 1).
            unit: distance unit.
            random_state: None (secure) or explicit seed (tests only).
        """
        V, _ = as_float_matrix(basis, "basis")
        n, k = V.shape
        if k >= n:
            raise InvalidParameterError("basis", "shape (n, k) with k < n", basis)
        share = check_probability(share, "share")
        Q, R = np.linalg.qr(V)
        if np.min(np.abs(np.diag(R))) < 1e-8 * max(1.0, float(np.max(np.abs(np.diag(R))))):
            raise InvalidParameterError("basis", "k linearly independent columns", basis)
        self = cls.__new__(cls)
        self.epsilon = check_positive_finite(epsilon, "epsilon")
        self.unit = check_positive_finite(unit, "unit")
        self.normalize_trace = True
        self._basis = Q
        self._basis32 = Q.astype(np.float32)
        self._n = n
        self._form = "subspace"
        self._share = share
        a = share * n / k
        b = (1.0 - share) * n / (n - k)
        self._ab = (a, b)
        self._eig = None
        Mechanism.__init__(self, dim=n, random_state=random_state)
        return self

    def _set_sigma(self, sigma: Any) -> None:
        if sigma is None or isinstance(sigma, (str, bytes)):
            raise InvalidTypeError("sigma", "a diagonal (n,) or a positive-definite matrix (n, n)", sigma)
        try:
            arr = np.asarray(sigma, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidTypeError("sigma", "a numeric diagonal (n,) or matrix (n, n)", sigma) from exc
        if arr.ndim == 1 and arr.size >= 1:
            if not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise InvalidParameterError("sigma", "a finite, non-negative diagonal", sigma)
            diag = arr + MASK_FLOOR
            if self.normalize_trace:
                diag = diag * (arr.size / diag.sum())
            self._n, self._form, self._diag = arr.size, "diagonal", diag
            self._sqrt_diag = np.sqrt(diag).astype(np.float32)
            self._eig = None
        elif arr.ndim == 2 and arr.shape[0] == arr.shape[1] and arr.size >= 1:
            if not np.all(np.isfinite(arr)):
                raise InvalidParameterError("sigma", "a finite matrix", sigma)
            if not np.allclose(arr, arr.T, rtol=1e-6, atol=1e-9):
                raise InvalidParameterError("sigma", "a symmetric matrix", sigma)
            vals, vecs = np.linalg.eigh((arr + arr.T) / 2)
            if vals[0] <= 1e-12 * max(1.0, vals[-1]):
                raise InvalidParameterError(
                    "sigma", "a positive-definite matrix", sigma, note=f"smallest eigenvalue {vals[0]:.3g}"
                )
            if self.normalize_trace:
                vals = vals * (arr.shape[0] / vals.sum())
            self._n, self._form = arr.shape[0], "dense"
            self._eig = (vals, vecs)
            self._sqrt = ((vecs * np.sqrt(vals)) @ vecs.T).astype(np.float32)
        else:
            raise InvalidParameterError("sigma", "shape (n,) or (n, n)", sigma)

    # -- the verb --------------------------------------------------------------------------
    def _apply_sqrt(self, U: np.ndarray) -> np.ndarray:
        """U @ Σ^½ row-wise (Σ^½ is symmetric). The diagonal form scales ``U`` in place."""
        if self._form == "diagonal":
            U *= self._sqrt_diag
            return U
        if self._form == "dense":
            return U @ self._sqrt
        assert self._basis is not None
        a, b = self._ab
        basis = self._basis32
        out = (U @ basis) @ basis.T
        out *= np.float32(np.sqrt(a) - np.sqrt(b))
        out += np.float32(np.sqrt(b)) * U
        return out

    def _perturb(self, X: np.ndarray, rng: RandomSource) -> np.ndarray:
        self._add_noise(X, X, rng)
        return X

    def _add_noise(self, src: np.ndarray, out: np.ndarray, rng: RandomSource) -> None:
        m, n = src.shape
        radius = rng.gamma(n, self.unit / self.epsilon, m).astype(np.float32)
        add_radial_noise(out, rng, radius, self._apply_sqrt, rowwise=self._form == "diagonal",
                         src=None if src is out else src)

    def _dense(self) -> tuple[np.ndarray, np.ndarray]:
        assert self._eig is not None, "dense form only"
        return self._eig

    def _subspace(self) -> np.ndarray:
        assert self._basis is not None, "subspace form only"
        return self._basis

    # -- geometry, for tests, reports and query transforms ---------------------------------
    @property
    def form(self) -> str:
        """``"diagonal"``, ``"dense"`` or ``"subspace"``."""
        return self._form

    def covariance(self) -> np.ndarray:
        """Σ as a dense (n, n) matrix (after flooring and trace normalisation)."""
        if self._form == "diagonal":
            return np.diag(self._diag)
        if self._form == "dense":
            vals, vecs = self._dense()
            return (vecs * vals) @ vecs.T
        a, b = self._ab
        P = self._subspace() @ self._subspace().T
        return a * P + b * (np.eye(self._n) - P)

    def variance_diagonal(self) -> np.ndarray:
        """diag(Σ): relative noise variance per coordinate (mean 1 when tr Σ = n)."""
        if self._form == "diagonal":
            return self._diag.copy()
        if self._form == "dense":
            vals, vecs = self._dense()
            return (vecs**2) @ vals
        a, b = self._ab
        return b + (a - b) * np.sum(self._subspace() ** 2, axis=1)

    def principal_directions(self) -> tuple[np.ndarray, np.ndarray]:
        """Eigen-pairs of Σ, largest variance first: (values (r,), vectors (n, r)).

        For the subspace form only the k directions of V are returned (the rest share b).
        """
        if self._form == "diagonal":
            order = np.argsort(-self._diag)
            return self._diag[order], np.eye(self._n)[:, order]
        if self._form == "dense":
            vals, vecs = self._dense()
            return vals[::-1].copy(), vecs[:, ::-1].copy()
        a, _ = self._ab
        return np.full(self._subspace().shape[1], a), self._subspace().copy()

    @property
    def basis(self) -> np.ndarray | None:
        """V for the subspace form, else None."""
        return None if self._basis is None else self._basis.copy()

    @property
    def floor_variance(self) -> float:
        """Variance of the least-noisy direction (b for the subspace form)."""
        if self._form == "subspace":
            return self._ab[1]
        return float(self.principal_directions()[0].min())

    def mahalanobis_norm(self, Z: Any) -> np.ndarray:
        """‖z‖_M = √(zᵀΣ⁻¹z) for each row of Z."""
        Zm, _ = as_float_matrix(Z, "Z", dim=self._n)
        if self._form == "diagonal":
            return np.sqrt(np.sum(Zm**2 / self._diag, axis=1))
        if self._form == "dense":
            vals, vecs = self._dense()
            return np.sqrt(np.sum((Zm @ vecs) ** 2 / vals, axis=1))
        a, b = self._ab
        coeff = Zm @ self._subspace()
        inside = np.sum(coeff**2, axis=1)
        outside = np.sum(Zm**2, axis=1) - inside
        return np.sqrt(inside / a + np.maximum(outside, 0.0) / b)

    def _describe(self, n: int | None) -> dict[str, Any]:
        n = self._n
        scale = self.unit / self.epsilon
        var = self.variance_diagonal()
        top = np.argsort(-var)[:5]
        low = np.argsort(var)[:5]
        info: dict[str, Any] = {
            "epsilon": self.epsilon,
            "unit": self.unit,
            "distance": "Mahalanobis distance sqrt(v^T Sigma^-1 v), in units of `unit`",
            "sigma_form": self._form,
            "sigma_trace": float(var.sum()),
            "noise_norm_rms": scale * float(np.sqrt(n * (n + 1) * var.sum() / n)),
            # E‖Z‖ = E[Y]·E‖Σ^½X‖ ≤ E[Y]·√(tr Σ / n) (Jensen); tight when Σ is near-isotropic
            "expected_noise_norm": n * scale * float(np.sqrt(var.sum() / n)),
            "expected_noise_norm_note": "upper bound E[Y]*sqrt(tr(Sigma)/n)",
            "indistinguishability_radius": scale,
            "noisiest_dimensions": [int(i) for i in top],
            "quietest_dimensions": [int(i) for i in low],
            "variance_range": [float(var.min()), float(var.max())],
            "guarantee": f"p(z|x)/p(z|x') <= exp(epsilon * ||x - x'||_M / unit); inputs within "
            f"{scale:.4g} in the Mahalanobis norm are e-indistinguishable",
        }
        if self._form == "subspace":
            a, b = self._ab
            info.update(subspace_rank=int(self._subspace().shape[1]), trace_share=self._share,
                        variance_in_subspace=a, variance_outside=b)
        return info

    def get_params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "unit": self.unit, "sigma_form": self._form, "dim": self._n}
