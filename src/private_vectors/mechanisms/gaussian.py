"""Gaussian mechanism with the classical (ε, δ) calibration (Dwork & Roth 2014, Thm. A.1):
σ = Δ₂·√(2 ln(1.25/δ)) / ε. The theorem is stated for ε < 1; for larger ε the same σ
is used as a conventional calibration and :meth:`describe` says so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import check_positive_finite, check_probability
from ..errors import InvalidParameterError
from ..random import RandomSource
from .base import Mechanism

__all__ = ["GaussianMechanism"]


class GaussianMechanism(Mechanism):
    """Isotropic Gaussian noise, given ``sigma`` directly or calibrated from (ε, δ, Δ₂).

    Args:
        sigma: per-coordinate standard deviation (exclusive with ``epsilon``/``delta``).
        epsilon: ε of the (ε, δ) guarantee.
        delta: δ of the (ε, δ) guarantee, in (0, 1).
        sensitivity: L2 sensitivity Δ₂ (default 1.0).
        dim: optional expected dimension.
        random_state: None (secure) or an explicit seed / Generator (tests only).
    """

    name = "gaussian"
    metric = "l2"

    def __init__(
        self,
        *,
        sigma: float | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
        sensitivity: float = 1.0,
        dim: int | None = None,
        random_state: Any = None,
    ) -> None:
        super().__init__(dim=dim, random_state=random_state)
        self.sensitivity = check_positive_finite(sensitivity, "sensitivity")
        if sigma is not None:
            if epsilon is not None or delta is not None:
                raise InvalidParameterError("sigma", "either sigma or (epsilon, delta), not both", sigma)
            self.sigma = check_positive_finite(sigma, "sigma")
            self.epsilon: float | None = None
            self.delta: float | None = None
        else:
            if epsilon is None or delta is None:
                raise InvalidParameterError("epsilon", "sigma, or both epsilon and delta", epsilon)
            self.epsilon = check_positive_finite(epsilon, "epsilon")
            self.delta = check_probability(delta, "delta")
            self.sigma = self.sensitivity * math.sqrt(2 * math.log(1.25 / self.delta)) / self.epsilon

    def _perturb(self, X: np.ndarray, rng: RandomSource) -> np.ndarray:
        X += np.float32(self.sigma) * rng.standard_normal(X.shape, dtype=np.float32)
        return X

    def _describe(self, n: int | None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sigma": self.sigma,
            "unit": self.sensitivity,
            "distance": "L2; guarantee for neighbours within the L2 sensitivity",
            "expected_noise_norm": None if n is None else self.sigma * math.sqrt(2) * math.exp(
                math.lgamma((n + 1) / 2) - math.lgamma(n / 2)),
            "noise_norm_rms": None if n is None else self.sigma * math.sqrt(n),
            "indistinguishability_radius": self.sensitivity,
        }
        if self.epsilon is not None:
            info["guarantee"] = (f"({self.epsilon:.4g}, {self.delta:.3g})-DP for inputs within L2 distance "
                                 f"{self.sensitivity:.4g}" + (" (classical calibration, proven for epsilon < 1)"
                                                              if self.epsilon >= 1 else ""))
        else:
            info["guarantee"] = "noise of fixed sigma; no (epsilon, delta) stated"
        return info

    def get_params(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "epsilon": self.epsilon, "delta": self.delta,
                "sensitivity": self.sensitivity, "dim": self.dim}
