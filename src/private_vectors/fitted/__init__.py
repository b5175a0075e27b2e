"""Fitted concepts: where a sensitive concept lives in one encoder's embedding space, fitted
from paired or labelled texts and saved as artefacts (``config.json`` + ``model.safetensors``).

Two kinds, each asked for by its own ``PrivateEmbedding`` parameter: a **noise concept**
(``noise_concept=``: the directions Mahalanobis noise concentrates on) and an **attribute
concept** (``erase=``: an attribute erased from the vectors). What the text stage detects
(``concept=``, presets such as ``"PII"``) is :mod:`private_vectors.text`, not this package.

* :class:`Concept` / :func:`builtin_concept` build paired sets D⁺ (sentences with the
  concept) and D⁻ = R(s, C) (:func:`remove_tokens`), with the removed values per pair;
* :class:`SparseMask` (SPARSE §3.1, App. H) learns a diagonal neuron mask;
* :class:`ConceptSubspace` estimates a low-rank V for Σ = a·VVᵀ + b·(I − VVᵀ);
* :class:`FittedConcept` is the saved artefact (config.json + model.safetensors) that turns
  into a :class:`~private_vectors.mechanisms.MahalanobisMechanism`;
* :func:`load_concept` resolves a built-in name, a folder or an artefact for an encoder;
  :func:`fit_concept` fits one;
* :class:`AttributeConcept` / :func:`fit_attribute` / :func:`load_attribute`: an attribute
  (sex, age band, …) erased from vectors (LEACE and variants, :mod:`.erasure`);
  :class:`ErasureSpec` names an attribute and a method for ``erase=`` (:mod:`.erase`);
  :func:`choose_method` is the rule that picked the default method from the measured table,
  :func:`attacker_coverage` what an erasure bounds and what was measured (:mod:`.measured`).
"""

from .._lazy import lazy_attributes

# Imported on first use (the command line lists ``private-vectors concept`` without loading them).
_HOMES = {
    "ESTIMATORS": ".artefact",
    "FittedConcept": ".artefact",
    "fit_concept": ".artefact",
    "load_concept": ".artefact",
    "shipped_artefact": ".artefact",
    "BUILTIN_ATTRIBUTES": ".attribute",
    "BUILTIN_METHODS": ".attribute",
    "DEFAULT_METHOD": ".attribute",
    "ErasureSpec": ".erase",
    "attacker_coverage": ".measured",
    "choose_method": ".measured",
    "AttributeConcept": ".attribute",
    "fit_attribute": ".attribute",
    "is_attribute_folder": ".attribute",
    "load_attribute": ".attribute",
    "SparseMask": ".mask",
    "BUILTIN_CONCEPTS": ".spec",
    "Concept": ".spec",
    "ConceptPairs": ".spec",
    "builtin_concept": ".spec",
    "ConceptSubspace": ".subspace",
    "find_tokens": ".removal",
    "remove_spans": ".removal",
    "remove_tokens": ".removal",
    "tidy": ".removal",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_attributes(__name__, _HOMES)
