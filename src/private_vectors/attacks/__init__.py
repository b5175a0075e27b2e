"""Inversion attacks against stored (perturbed) vectors.

All attackers follow :class:`private_vectors.attacks.base.Attacker`: ``fit(vectors,
token_lists)``, ``token_probabilities(vectors)``, ``evaluate(vectors, token_lists)``.

* :class:`MLCAttacker` — MLP multi-label token presence (SPARSE paper, App. I.3);
* :class:`NearestNeighbourAttacker` — k-NN against an auxiliary corpus;
* :class:`PriorAttacker` — the no-vector baseline (most frequent training tokens);
* ``private_vectors.attacks.generative`` — GEIA-style generative inversion (when present).
"""

from .base import Attacker, check_token_lists, normalize_token
from .mlc import MLCAttacker
from .nearest_neighbour import NearestNeighbourAttacker
from .prior import PriorAttacker

__all__ = [
    "Attacker",
    "MLCAttacker",
    "NearestNeighbourAttacker",
    "PriorAttacker",
    "check_token_lists",
    "normalize_token",
]
