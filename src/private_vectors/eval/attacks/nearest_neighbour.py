"""Nearest-neighbour inversion against an auxiliary corpus.

The attacker holds an auxiliary corpus of sentences whose sensitive tokens it knows, embeds
it with the same model and perturbs it with the same mechanism and ε (it knows both). For a
stolen vector it retrieves the ``k`` most similar auxiliary vectors (cosine) and guesses
that the victim sentence contains the tokens its neighbours contain: the probability of a
token is the similarity-weighted share of neighbours containing it (Song & Raghunathan
2020 use the same "nearest neighbour" inversion baseline).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._validation import as_float_matrix, check_int, check_positive_finite
from ...encoders.base import l2_normalize
from .base import Attacker

__all__ = ["NearestNeighbourAttacker"]


class NearestNeighbourAttacker(Attacker):
    """k-nearest-neighbour token inversion.

    Args:
        k: neighbours consulted per victim vector.
        temperature: softmax temperature over the neighbours' cosine similarities; ``inf``
            (default) weighs the k neighbours equally.
        rule, threshold: when a token counts as recovered (see :class:`Attacker`).
    """

    name = "nn"

    def __init__(self, *, k: int = 5, temperature: float = float("inf"), rule: str = "top-k",
                 threshold: float = 0.5) -> None:
        super().__init__(rule=rule, threshold=threshold)
        self.k = check_int(k, "k", minimum=1)
        self.temperature = check_positive_finite(temperature, "temperature", allow_inf=True)

    def fit(self, vectors: Any, token_lists: Sequence[Sequence[str]]) -> NearestNeighbourAttacker:
        """Store the auxiliary corpus (perturbed vectors and their tokens); returns self."""
        X, tokens = self._check_fit_input(vectors, token_lists)
        self.aux_vectors_ = l2_normalize(X).astype(np.float32)
        self.aux_tokens_ = [sorted(set(t)) for t in tokens]
        return self

    def neighbours(self, vectors: Any) -> tuple[np.ndarray, np.ndarray]:
        """Indices (m, k) of the nearest auxiliary vectors and their cosine similarities."""
        self._check_fitted("aux_vectors_")
        Q, _ = as_float_matrix(vectors, "vectors", dim=self.aux_vectors_.shape[1])
        Q = l2_normalize(Q).astype(np.float32)
        k = min(self.k, len(self.aux_vectors_))
        idx_all, sim_all = [], []
        for start in range(0, len(Q), 512):
            sims = Q[start:start + 512] @ self.aux_vectors_.T
            idx = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            part = np.take_along_axis(sims, idx, axis=1)
            order = np.argsort(-part, axis=1)
            idx_all.append(np.take_along_axis(idx, order, axis=1))
            sim_all.append(np.take_along_axis(part, order, axis=1))
        return np.concatenate(idx_all), np.concatenate(sim_all)

    def token_probabilities(self, vectors: Any) -> list[dict[str, float]]:
        """Per vector, {token: weighted share of its k neighbours containing the token}."""
        idx, sims = self.neighbours(vectors)
        if np.isinf(self.temperature):
            weights = np.full(sims.shape, 1.0 / sims.shape[1])
        else:
            z = (sims - sims.max(axis=1, keepdims=True)) / self.temperature
            weights = np.exp(z)
            weights /= weights.sum(axis=1, keepdims=True)
        out = []
        for row_idx, row_w in zip(idx, weights, strict=True):
            probs: dict[str, float] = {}
            for j, w in zip(row_idx, row_w, strict=True):
                for t in self.aux_tokens_[j]:
                    probs[t] = probs.get(t, 0.0) + float(w)
            out.append(probs)
        return out
