"""The "none" mechanism: no noise, for baselines. Offers no privacy."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..random import RandomSource
from .base import Mechanism

__all__ = ["IdentityMechanism"]


class IdentityMechanism(Mechanism):
    """Returns a float32 copy of its input. No privacy: a baseline only."""

    name = "none"
    metric = "none"

    def _perturb(self, X: np.ndarray, rng: RandomSource) -> np.ndarray:
        return X.copy()

    def _describe(self, n: int | None) -> dict[str, Any]:
        return {"epsilon": float("inf"), "expected_noise_norm": 0.0, "noise_norm_rms": 0.0,
                "indistinguishability_radius": 0.0, "guarantee": "none: vectors are stored as encoded"}

    def get_params(self) -> dict[str, Any]:
        return {"dim": self.dim}
