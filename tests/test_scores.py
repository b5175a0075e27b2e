"""Calibrated relevance: the rescaling follows the stored noise, measured on simulated vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from private_vectors import PrivateEmbedding
from private_vectors.errors import InvalidParameterError
from private_vectors.integrations.scores import noise_rms, relevance_score_fn, shrink_factor


def test_shrink_factor_follows_eps():
    low, high = PrivateEmbedding(model="fake", eps=10), PrivateEmbedding(model="fake", eps=40)
    assert shrink_factor(low) < shrink_factor(high) < 1
    n, unit = low.dim, low.unit
    assert noise_rms(low) == pytest.approx(math.sqrt(n * (n + 1)) * unit / 10)  # Gamma(n, unit/eps) norm


def test_calibrated_cosine_recovers_the_clean_cosine():
    """Perturb, normalise, score: the calibrated score is close to the clean cosine on average."""
    ef = PrivateEmbedding(model="fake", eps=8, space="cosine", random_state=0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, ef.dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x + 0.8 * rng.normal(size=x.shape) / math.sqrt(ef.dim)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    clean = np.sum(q * x, axis=1)
    z = ef.mechanism.perturb(x, rng=ef.pipeline.random.source())
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    noisy = np.sum(q * z, axis=1)
    fn = relevance_score_fn(ef, "cosine_distance")
    calibrated = np.array([fn(1 - s) for s in noisy])
    assert abs(np.mean(noisy) - np.mean(clean)) > 0.1  # the compression is real
    assert abs(np.mean(calibrated) - np.mean(clean)) < 0.03


def test_inner_product_stores_are_not_rescaled_and_bad_measure_refused():
    ef = PrivateEmbedding(model="fake", eps=20, space="ip")
    assert relevance_score_fn(ef, "inner_product")(0.6) == pytest.approx(0.6)
    assert relevance_score_fn(ef, "ip_distance")(0.4) == pytest.approx(0.6)
    with pytest.raises(InvalidParameterError, match="measure"):
        relevance_score_fn(ef, "hamming")


def test_an_augmented_store_is_calibrated_with_its_bound():
    """The l2 relevance function of an ``augment`` store reads the embedding's public bound M
    (stored rows have norm M), not a guess from the noise."""
    pe = PrivateEmbedding(model="fake:16", eps=10, space="ip", random_state=0)
    assert pe.store_geometry == "augment" and pe.geometry_bound is not None
    fn = relevance_score_fn(pe, "l2_squared")
    # ‖q − z‖² = ‖q‖² + M² − 2q·z for a unit query: a clean cosine c comes back as c (clipped to [0, 1])
    M = pe.geometry_bound
    assert fn(1.0 + M**2 - 2 * 0.5) == pytest.approx(0.5)
