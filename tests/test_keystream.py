"""The batched keyed sampler (derivation v2): per-text determinism and exact distributions."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from scipy import stats

from private_vectors.keystream import NotRowwiseError, RowKeyedSource, keyed_perturb
from private_vectors.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    MahalanobisMechanism,
    PurkayasthaMechanism,
)

ALPHA = 1e-3
KEY = b"\x07" * 32
CTX = b"context"


def _texts(k: int, prefix: str = "t") -> list[str]:
    return [f"{prefix}{i}" for i in range(k)]


def _source(texts, key=KEY, ctx=CTX):
    return RowKeyedSource(key, ctx, [t.encode() for t in texts])


@pytest.mark.parametrize("make", [
    lambda n: LaplaceMechanism(epsilon=5.0, unit=n ** -0.5),
    lambda n: PurkayasthaMechanism(epsilon=50.0),
    lambda n: GaussianMechanism(sigma=0.1),
    lambda n: MahalanobisMechanism(epsilon=5.0, sigma=np.linspace(0.1, 1.0, n), unit=n ** -0.5),
])
def test_noise_depends_on_text_not_batch(make):
    n = 32
    mech = make(n)
    rng = np.random.default_rng(0)
    texts = _texts(12)
    X = rng.standard_normal((12, n))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    full = keyed_perturb(mech, X, KEY, CTX, texts)
    again = keyed_perturb(mech, X, KEY, CTX, texts)
    assert np.array_equal(full, again)
    order = rng.permutation(12)
    shuffled = keyed_perturb(mech, X[order], KEY, CTX, [texts[i] for i in order])
    assert np.allclose(shuffled, full[order], atol=1e-6)
    for i in (0, 5, 11):  # alone, and inside another batch
        alone = keyed_perturb(mech, X[i:i + 1], KEY, CTX, [texts[i]])
        other = keyed_perturb(mech, np.vstack([X[i], X[(i + 1) % 12]]), KEY, CTX, [texts[i], "something else"])
        assert np.allclose(alone[0], full[i], atol=1e-6) and np.allclose(other[0], full[i], atol=1e-6)


def test_noise_depends_on_key_context_and_text():
    mech = LaplaceMechanism(epsilon=5.0)
    X = np.zeros((2, 16))
    base = keyed_perturb(mech, X, KEY, CTX, ["a", "b"])
    assert not np.allclose(base[0], base[1])
    assert not np.allclose(base, keyed_perturb(mech, X, b"\x08" * 32, CTX, ["a", "b"]))
    assert not np.allclose(base, keyed_perturb(mech, X, KEY, CTX + b"!", ["a", "b"]))
    q = keyed_perturb(mech, X, KEY, CTX, ["a", "b"], label=b"query")
    assert not np.allclose(base, q)


def test_non_rowwise_mechanism_falls_back_per_text():
    class Odd(LaplaceMechanism):
        """Draws one extra vector for the whole batch: not row-wise."""

        def _perturb(self, X, rng):
            X = super()._perturb(X, rng)
            X += rng.standard_normal((1, X.shape[1])).astype(np.float32) * 0
            return X

    mech = Odd(epsilon=5.0)
    X = np.zeros((3, 8))
    out = keyed_perturb(mech, X, KEY, CTX, ["a", "b", "c"])
    alone = keyed_perturb(LaplaceMechanism(epsilon=5.0), X[:1], KEY, CTX, ["a"])
    assert np.allclose(out[0], alone[0])
    with pytest.raises(NotRowwiseError):
        _source(["a", "b"]).random(5)


def test_source_is_never_pickled_and_repr_redacted():
    src = _source(["a"])
    assert KEY.hex() not in repr(src)
    with pytest.raises(TypeError):
        pickle.dumps(src)


def test_uniforms_and_normals_exact():
    src = _source(_texts(4000))
    u = src.random((4000, 5)).ravel()
    assert u.min() >= 0 and u.max() < 1
    assert stats.kstest(u, stats.uniform.cdf).pvalue > ALPHA
    z = src.standard_normal((4000, 5)).ravel()
    assert stats.kstest(z, stats.norm.cdf).pvalue > ALPHA
    z32 = src.standard_normal((4000, 3), dtype=np.float32)
    assert z32.dtype == np.float32 and stats.kstest(z32.ravel(), stats.norm.cdf).pvalue > ALPHA
    # pairs within a row are independent (Box-Muller's cos/sin halves)
    zz = src.standard_normal((4000, 2))
    assert abs(np.corrcoef(zz[:, 0], zz[:, 1])[0, 1]) < 4 / math.sqrt(4000)


@pytest.mark.parametrize("n,eps,unit", [(16, 2.0, 1.0), (384, 10.0, 1 / math.sqrt(384)), (768, 40.0, 0.5)])
def test_keyed_laplace_radius_is_gamma(n, eps, unit):
    mech = LaplaceMechanism(epsilon=eps, unit=unit)
    Z = keyed_perturb(mech, np.zeros((3000, n)), KEY, CTX, _texts(3000)).astype(np.float64)
    radius = np.linalg.norm(Z, axis=1)
    assert stats.kstest(radius, stats.gamma(a=n, scale=unit / eps).cdf).pvalue > ALPHA


def test_keyed_laplace_directions_uniform():
    n = 8
    Z = keyed_perturb(LaplaceMechanism(epsilon=1.0), np.zeros((20000, n)), KEY, CTX, _texts(20000))
    U = Z.astype(np.float64) / np.linalg.norm(Z, axis=1, keepdims=True)
    assert np.abs(U.mean(axis=0)).max() < 4 / math.sqrt(20000)
    assert np.allclose(U.T @ U / len(U), np.eye(n) / n, atol=0.01)
    assert stats.kstest((U[:, 0] + 1) / 2, stats.beta((n - 1) / 2, (n - 1) / 2).cdf).pvalue > ALPHA


def test_keyed_gaussian_and_purkayastha_distributions():
    g = keyed_perturb(GaussianMechanism(sigma=0.5), np.zeros((20000, 2)), KEY, CTX, _texts(20000))
    assert stats.kstest(g[:, 0] / 0.5, stats.norm.cdf).pvalue > ALPHA
    mech = PurkayasthaMechanism(epsilon=30.0)
    x = np.zeros(16)
    x[0] = 1.0
    Z = keyed_perturb(mech, np.tile(x, (3000, 1)), KEY, CTX, _texts(3000)).astype(np.float64)
    theta = np.arccos(np.clip(Z[:, 0], -1, 1))
    ref = mech.sample_angles(16, 20000, np.random.default_rng(3))  # the exact sampler, fresh randomness
    assert stats.ks_2samp(theta, ref).pvalue > ALPHA


def test_gamma_non_integer_shape_and_checks():
    src = _source(_texts(5000))
    g = src.gamma(2.5, 3.0, 5000)
    assert stats.kstest(g, stats.gamma(a=2.5, scale=3.0).cdf).pvalue > ALPHA
    with pytest.raises(ValueError):
        src.gamma(0, 1.0, 5000)
