"""Inversion attacks against stored (perturbed) vectors.

All attackers follow :class:`private_vectors.eval.attacks.base.Attacker`: ``fit(vectors,
token_lists)``, ``token_probabilities(vectors)``, ``evaluate(vectors, token_lists)``.

* :class:`MLCAttacker` — MLP multi-label token presence (SPARSE paper, App. I.3);
* :class:`NearestNeighbourAttacker` — k-NN against an auxiliary corpus;
* :class:`PriorAttacker` — the no-vector baseline (most frequent training tokens);
* :class:`GenerativeInversion` — GEIA-style generative inversion (a vector-conditioned decoder).

Attribute attackers (what a store reveals about sex, age band, ...): :mod:`.attribute` (the
probes a fitted attribute concept records) and :mod:`.family` (a fixed family — logistic, two
MLPs, gradient-boosted trees — trained to convergence on protected vectors; the strongest counts).
"""

from .base import Attacker, check_token_lists, normalize_token
from .generative import GenerativeInversion
from .mlc import MLCAttacker
from .nearest_neighbour import NearestNeighbourAttacker
from .prior import PriorAttacker

__all__ = [
    "Attacker",
    "GenerativeInversion",
    "MLCAttacker",
    "NearestNeighbourAttacker",
    "PriorAttacker",
    "check_token_lists",
    "normalize_token",
]
