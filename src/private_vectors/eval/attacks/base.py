"""The interface every inversion attacker follows.

An attacker steals what the store holds — perturbed vectors read back from Chroma
(``collection.get(include=["embeddings"])``) or FAISS (``index.reconstruct_n``) — and
tries to recover the sensitive tokens of the sentences behind them. Following the SPARSE
paper's threat model (App. I), the attacker knows the mechanism and ε, so it is trained on
vectors perturbed the same way (attacker-train split) and evaluated on a disjoint
victim-test split.

Contract (scikit-learn style):

* ``fit(vectors, token_lists) -> self`` — vectors (m, n), one list of sensitive tokens
  per vector; learned state ends in ``_``.
* ``token_probabilities(vectors) -> list[dict[str, float]]`` — per victim vector, the
  probability the attacker assigns to each token it considers (tokens absent from the
  dict have probability 0). Tokens are compared after :func:`normalize_token`.
* ``evaluate(vectors, token_lists) -> {"leakage": .., "confidence": ..}`` — paper eq. 13
  and eq. 14 (see :mod:`private_vectors.eval.metrics`).
"""

from __future__ import annotations

import abc
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..._validation import as_float_matrix, check_probability
from ...errors import InvalidParameterError, InvalidTypeError

__all__ = ["Attacker", "check_token_lists", "normalize_token"]

_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$", re.UNICODE)
_SPACES = re.compile(r"\s+")


def normalize_token(token: str) -> str:
    """Canonical form used to compare tokens: lower-cased, edge punctuation stripped, spaces collapsed."""
    return _SPACES.sub(" ", _EDGE_PUNCT.sub("", token.strip().lower()))


def check_token_lists(token_lists: Any, m: int, name: str = "token_lists") -> list[list[str]]:
    """Validate one list of token strings per vector and normalise the tokens (empties dropped)."""
    if isinstance(token_lists, (str, bytes)) or token_lists is None:
        raise InvalidTypeError(name, "a list with one list of token strings per vector", token_lists)
    lists = list(token_lists)
    if len(lists) != m:
        raise InvalidParameterError(name, f"{m} token lists (one per vector)", token_lists,
                                    note=f"got {len(lists)}")
    out: list[list[str]] = []
    for i, toks in enumerate(lists):
        if isinstance(toks, (str, bytes)):
            raise InvalidTypeError(f"{name}[{i}]", "a list of token strings", toks)
        row = []
        for tok in toks:
            if not isinstance(tok, str):
                raise InvalidTypeError(f"{name}[{i}]", "a list of token strings", toks)
            norm = normalize_token(tok)
            if norm:
                row.append(norm)
        out.append(row)
    return out


class Attacker(abc.ABC):
    """Base class of the inversion attackers (MLC, nearest-neighbour, generative).

    Args:
        rule: when a token counts as recovered for the leakage metric (paper eq. 13):
            ``"top-k"`` (default: among the attacker's k_s best guesses, k_s = the sentence's
            number of distinct sensitive tokens) or ``"threshold"``.
        threshold: probability at or above which a token counts as recovered under
            ``rule="threshold"``; default 0.5.
    """

    name: ClassVar[str] = "attacker"

    def __init__(self, *, rule: str = "top-k", threshold: float = 0.5) -> None:
        if rule not in ("top-k", "threshold"):
            raise InvalidParameterError("rule", "'top-k' or 'threshold'", rule)
        self.rule = rule
        self.threshold = check_probability(threshold, "threshold", open_interval=False)

    # -- the contract ------------------------------------------------------------------
    @abc.abstractmethod
    def fit(self, vectors: Any, token_lists: Sequence[Sequence[str]]) -> Attacker:
        """Train on attacker-side (perturbed) vectors and their sensitive tokens; returns self."""

    @abc.abstractmethod
    def token_probabilities(self, vectors: Any) -> list[dict[str, float]]:
        """Per vector, ``{normalised token: probability}`` (missing tokens: probability 0)."""

    def evaluate(self, vectors: Any, token_lists: Sequence[Sequence[str]]) -> dict[str, float]:
        """Leakage (eq. 13) and confidence (eq. 14) on victim vectors with their true tokens."""
        from ..metrics import confidence, leakage

        mat, _ = as_float_matrix(vectors, "vectors")
        truth = check_token_lists(token_lists, mat.shape[0])
        probs = self._truth_probabilities(mat, truth)
        return {
            "leakage": leakage(truth, probs, rule=self.rule, threshold=self.threshold),
            "confidence": confidence(truth, probs),
            "n_victims": float(mat.shape[0]),
            "n_token_instances": float(sum(len(t) for t in truth)),
        }

    # -- helpers for subclasses ----------------------------------------------------------
    def _truth_probabilities(self, vectors: np.ndarray, truth: list[list[str]]) -> list[dict[str, float]]:
        """Probabilities :meth:`evaluate` scores; subclasses may restrict them to the true tokens
        plus each sentence's top-k guesses (all the leakage rules need)."""
        return self.token_probabilities(vectors)

    @staticmethod
    def _check_fit_input(vectors: Any, token_lists: Any) -> tuple[np.ndarray, list[list[str]]]:
        mat, _ = as_float_matrix(vectors, "vectors")
        if mat.shape[0] < 2:
            raise InvalidParameterError("vectors", "at least 2 training vectors", vectors)
        return mat, check_token_lists(token_lists, mat.shape[0])

    def _check_fitted(self, attribute: str) -> None:
        if not hasattr(self, attribute):
            raise InvalidParameterError("attacker", "a fitted attacker (call fit first)", self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rule={self.rule!r}, threshold={self.threshold})"
