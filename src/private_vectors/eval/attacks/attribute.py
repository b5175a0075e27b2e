"""Attribute-inference attackers: retrained on protected vectors, scored on held-out ones.

The attacker knows the attribute for some stored records and trains a classifier on their
(protected) vectors; it is scored on other stored records (grouped folds: an identical vector
is never both trained on and scored). These are the probes a fitted attribute concept reports
(:mod:`private_vectors.fitted.probe`), so the harness and a concept's recorded figures agree.
"""

from ...fitted.probe import ATTRIBUTE_ATTACKERS, attribute_attack, majority_rate, wilson_interval

__all__ = ["ATTRIBUTE_ATTACKERS", "attribute_attack", "majority_rate", "wilson_interval"]
