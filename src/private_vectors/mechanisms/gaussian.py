"""Gaussian mechanism, calibrated from (ε, δ, Δ₂).

* ``calibration="analytic"`` (default): the *analytic Gaussian mechanism* of Balle & Wang
  (2018), "Improving the Gaussian Mechanism for Differential Privacy: Analytical Calibration
  and Optimal Denoising", ICML, Thm. 8: N(0, σ²I) noise is (ε, δ)-DP exactly when

      Φ(Δ/(2σ) − εσ/Δ) − e^ε · Φ(−Δ/(2σ) − εσ/Δ) ≤ δ,

  and σ is the smallest value satisfying it (found by root finding on log σ, the e^ε term
  evaluated in log space so ε in the hundreds does not overflow). Valid for every ε > 0.
* ``calibration="classic"``: σ = Δ₂·√(2 ln(1.25/δ)) / ε (Dwork & Roth 2014, Thm. A.1),
  proven only for ε < 1. For large ε it adds *less* noise than (ε, δ)-DP requires — σ falls
  like 1/ε where the exact calibration falls like 1/√ε — so it is kept for comparison only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import check_positive_finite, check_probability
from ..errors import InvalidParameterError
from ..random import RandomSource
from .base import Mechanism

__all__ = ["GaussianMechanism", "analytic_gaussian_delta", "analytic_gaussian_sigma", "classic_gaussian_sigma"]

CALIBRATIONS = ("analytic", "classic")


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = Δ·√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm. A.1; proven for ε < 1)."""
    return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def analytic_gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """The exact δ of N(0, σ²I) noise at ε for L2 sensitivity Δ (Balle & Wang 2018, Thm. 8):
    Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)."""
    from scipy.special import log_ndtr, ndtr

    a, b = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
    return float(ndtr(a - b) - math.exp(min(epsilon + float(log_ndtr(-a - b)), 700.0)))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest σ for which N(0, σ²I) noise is (ε, δ)-DP (Balle & Wang 2018, Thm. 8/Alg. 1).

    δ(σ) decreases in σ; the root of δ(σ) = δ is bracketed by doubling/halving and found by
    Brent's method on log σ (relative tolerance 1e-12).
    """
    from scipy.optimize import brentq

    def gap(log_sigma: float) -> float:
        return analytic_gaussian_delta(math.exp(log_sigma), epsilon, sensitivity) - delta

    lo = hi = math.log(sensitivity)
    while gap(hi) > 0:
        hi += math.log(2.0)
    while gap(lo) <= 0:
        lo -= math.log(2.0)
    return math.exp(brentq(gap, lo, hi, xtol=1e-14, rtol=1e-12))


class GaussianMechanism(Mechanism):
    """Isotropic Gaussian noise, given ``sigma`` directly or calibrated from (ε, δ, Δ₂).

    Args:
        sigma: per-coordinate standard deviation (exclusive with ``epsilon``/``delta``).
        epsilon: ε of the (ε, δ) guarantee.
        delta: δ of the (ε, δ) guarantee, in (0, 1).
        sensitivity: L2 sensitivity Δ₂ (default 1.0).
        calibration: ``"analytic"`` (default; exact for every ε, Balle & Wang 2018) or
            ``"classic"`` (Dwork & Roth; proven for ε < 1 only, too little noise above).
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
        calibration: str = "analytic",
        dim: int | None = None,
        random_state: Any = None,
    ) -> None:
        super().__init__(dim=dim, random_state=random_state)
        self.sensitivity = check_positive_finite(sensitivity, "sensitivity")
        if calibration not in CALIBRATIONS:
            raise InvalidParameterError("calibration", "'analytic' or 'classic'", calibration)
        self.calibration = calibration
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
            calibrate = analytic_gaussian_sigma if calibration == "analytic" else classic_gaussian_sigma
            self.sigma = calibrate(self.epsilon, self.delta, self.sensitivity)

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
            note = (" (analytic calibration, Balle & Wang 2018)" if self.calibration == "analytic"
                    else " (classical calibration, proven for epsilon < 1)" if self.epsilon >= 1 else "")
            info["guarantee"] = (f"({self.epsilon:.4g}, {self.delta:.3g})-DP for inputs within L2 distance "
                                 f"{self.sensitivity:.4g}" + note)
            info["calibration"] = self.calibration
        else:
            info["guarantee"] = "noise of fixed sigma; no (epsilon, delta) stated"
        return info

    def get_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"sigma": self.sigma, "epsilon": self.epsilon, "delta": self.delta,
                  "sensitivity": self.sensitivity, "dim": self.dim}
        if self.epsilon is not None:
            params["calibration"] = self.calibration
        return params
