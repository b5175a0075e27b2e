"""Generalised (spherical) Laplace mechanism.

Density p(z | x) ∝ exp(−ε‖z − x‖₂ / unit): the noise radius is Gamma(n, unit/ε) and
its direction uniform on the sphere (Wu et al., "Evaluating … metric-LDP", as used in
the SPARSE paper, Def. 3; Fernandes et al. 2019). ε-metric-LDP for the L2 metric
measured in ``unit``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..random import RandomSource
from .base import EpsilonPerUnit, add_radial_noise

__all__ = ["LaplaceMechanism"]


class LaplaceMechanism(EpsilonPerUnit):
    """Spherical Laplace noise, ε-metric-LDP in L2.

    Args:
        epsilon: privacy parameter per ``unit`` of L2 distance, finite and > 0.
        unit: the distance unit (default 1.0). ``PrivateEmbedding`` uses 1/√n.
        dim: optional expected dimension.
        random_state: None (secure) or an explicit seed / Generator (tests only).
    """

    name = "laplace"
    metric = "l2"
    _additive = True

    @property
    def scale(self) -> float:
        """Scale of the Gamma(n, scale) noise radius: unit / ε."""
        return self.unit / self.epsilon

    def _perturb(self, X: np.ndarray, rng: RandomSource) -> np.ndarray:
        self._add_noise(X, X, rng)
        return X

    def _add_noise(self, src: np.ndarray, out: np.ndarray, rng: RandomSource) -> None:
        m, n = src.shape
        radius = rng.gamma(n, self.scale, m).astype(np.float32)
        add_radial_noise(out, rng, radius, src=None if src is out else src)

    def _describe(self, n: int | None) -> dict[str, Any]:
        return {
            "epsilon": self.epsilon,
            "unit": self.unit,
            "distance": "euclidean (L2) distance, in units of `unit`",
            "expected_noise_norm": None if n is None else n * self.scale,
            "noise_norm_rms": None if n is None else self.scale * float(np.sqrt(n * (n + 1))),
            "indistinguishability_radius": self.scale,
            "guarantee": f"p(z|x)/p(z|x') <= exp(epsilon * ||x - x'||_2 / unit); inputs within "
            f"{self.scale:.4g} (L2) are e-indistinguishable",
        }
