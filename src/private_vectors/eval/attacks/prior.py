"""The prior baseline: an "attacker" that ignores the vectors.

It guesses, for every victim, the tokens most frequent in its training sentences, with their
training frequencies as probabilities. Its leakage is what any attacker gets for free from
the token distribution alone; an attack is informative only above it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..._validation import as_float_matrix, check_int
from .base import Attacker

__all__ = ["PriorAttacker"]


class PriorAttacker(Attacker):
    """Token-frequency baseline (same guesses for every vector).

    Args:
        top: how many of the most frequent tokens to report per vector.
        rule, threshold: when a token counts as recovered (see :class:`Attacker`).
    """

    name = "prior"

    def __init__(self, *, top: int = 200, rule: str = "top-k", threshold: float = 0.5) -> None:
        super().__init__(rule=rule, threshold=threshold)
        self.top = check_int(top, "top", minimum=1)

    def fit(self, vectors: Any, token_lists: Sequence[Sequence[str]]) -> PriorAttacker:
        """Count in how many training sentences each token occurs; returns self."""
        X, tokens = self._check_fit_input(vectors, token_lists)
        # dict.fromkeys, not set: ties in most_common keep first-seen order, which must not
        # depend on the process's string-hash seed (PYTHONHASHSEED)
        counts = Counter(t for toks in tokens for t in dict.fromkeys(toks))
        self.frequencies_ = {t: c / X.shape[0] for t, c in counts.most_common(self.top)}
        return self

    def token_probabilities(self, vectors: Any) -> list[dict[str, float]]:
        """The training frequencies of the most frequent tokens, for every vector."""
        self._check_fitted("frequencies_")
        X, _ = as_float_matrix(vectors, "vectors")
        return [dict(self.frequencies_) for _ in range(X.shape[0])]
