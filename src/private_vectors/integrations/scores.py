"""Relevance scores calibrated to the noise a collection was written with.

A perturbed document vector is ``z = x + e`` (``x`` the clean unit vector, ``e`` the
mechanism's noise). In a cosine store (or with ``store_geometry="normalize"``) the document is
kept as ``z / ‖z‖``, so a clean unit query ``q`` scores

    cos(q, z) = (q·x + q·e) / ‖x + e‖ ≈ q·x / √(1 + E‖e‖²)

because ``e`` is independent of ``x`` and nearly orthogonal to it in n dimensions
(``E[(x·e)] = 0``, so ``E‖x + e‖² = 1 + E‖e‖²``). Every score is shrunk by the same factor,
so a fixed threshold such as LangChain's ``similarity_score_threshold`` retriever at 0.5
returns little or nothing (measured in benchmarks/score_calibration.py). :func:`relevance_score_fn` undoes the shrinkage: it multiplies the cosine by
``√(1 + r²)`` with ``r²`` the mechanism's mean squared noise norm at the stored ε (the
``noise_norm_rms`` of :meth:`~private_vectors.mechanisms.Mechanism.describe`: for the
spherical Laplace of density ∝ exp(−ε‖e‖/unit) the norm is Gamma(n, unit/ε), so
``E‖e‖² = n(n+1)(unit/ε)²``). The noise term ``q·e / ‖z‖`` stays (standard deviation about
``r / √n`` before the rescaling): scores are unbiased, not denoised.

Inner-product stores (``store_geometry="augment"`` or ``"none"`` in an ``ip`` space) keep
``q·z = q·x + q·e``, which is already unbiased: the function is LangChain's usual map there.
The result is clipped to [0, 1], the range LangChain's relevance scores promise.

The noise term keeps its spread after the rescaling, so near the threshold a calibrated store
admits hits a plain store would not (and misses some it would); the lower ε, the wider that
band (benchmarks/score_calibration.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..errors import InvalidParameterError, InvalidTypeError

__all__ = ["MEASURES", "noise_rms", "relevance_score_fn", "shrink_factor"]

# what the store returns for a hit: Chroma's distances per space, FAISS's raw scores
MEASURES = ("cosine_distance", "ip_distance", "l2_squared", "inner_product")


def noise_rms(embedding: Any) -> float:
    """√E‖e‖² of ``embedding``'s document noise at its ε (0 for ``mechanism="none"``).

    Read from the mechanism's own description (``noise_norm_rms``); a mechanism that does not
    state it counts as noiseless (no rescaling: scores are never inflated by a guess).
    """
    mechanism = getattr(embedding, "mechanism", None)
    if mechanism is None:
        raise InvalidTypeError("embedding", "a PrivateEmbedding", embedding)
    try:
        value = mechanism.describe(int(embedding.dim)).get("noise_norm_rms")
    except Exception:  # a custom mechanism without a description
        return 0.0
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) and value > 0 else 0.0


def shrink_factor(embedding: Any) -> float:
    """The factor ``1 / √(1 + r²)`` by which normalisation shrinks cosines (1 when documents
    are not normalised: ``ip``/``l2`` stores without ``store_geometry="normalize"``)."""
    if getattr(embedding, "store_geometry", "none") != "normalize" and getattr(embedding, "space", "") != "cosine":
        return 1.0
    return 1.0 / math.sqrt(1.0 + noise_rms(embedding) ** 2)


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def relevance_score_fn(embedding: Any, measure: str = "cosine_distance") -> Callable[[float], float]:
    """A LangChain ``relevance_score_fn`` calibrated to ``embedding``'s noise.

    Args:
        embedding: the PrivateEmbedding the collection was written with (its stored ε).
        measure: what the store hands the function: ``"cosine_distance"`` (Chroma cosine,
            ``1 − cos``), ``"ip_distance"`` (Chroma ip, ``1 − q·z``), ``"l2_squared"`` (Chroma l2
            and FAISS L2, ``‖q − z‖²``) or ``"inner_product"`` (FAISS inner product, ``q·z``).

    Returns:
        distance or score → the estimated clean cosine, clipped to [0, 1] (see the module).
    """
    if not isinstance(measure, str) or measure not in MEASURES:
        raise InvalidParameterError("measure", f"one of {MEASURES}", measure)
    scale = 1.0 / shrink_factor(embedding)
    normalized = scale != 1.0 or getattr(embedding, "store_geometry", "none") == "normalize"
    bound = getattr(embedding, "geometry_bound", None)
    # ‖z‖² of a stored document: 1 once normalised, M² with the augment coordinate, else 1 + r²
    stored_sq = 1.0 if normalized else (float(bound) ** 2 if bound else 1.0 + noise_rms(embedding) ** 2)

    def from_similarity(sim: float) -> float:
        return _clip(sim * scale)

    if measure == "cosine_distance":
        return lambda distance: from_similarity(1.0 - float(distance))
    if measure == "ip_distance":
        return lambda distance: from_similarity(1.0 - float(distance))
    if measure == "inner_product":
        return lambda score: from_similarity(float(score))
    return lambda distance: from_similarity((1.0 + stored_sq - float(distance)) / 2.0)
