"""Inversion attacks against stored (perturbed) vectors.

All attackers follow :class:`private_vectors.attacks.base.Attacker`: ``fit(vectors,
token_lists)``, ``token_probabilities(vectors)``, ``evaluate(vectors, token_lists)``.
"""

from .base import Attacker, check_token_lists, normalize_token

__all__ = ["Attacker", "check_token_lists", "normalize_token"]
