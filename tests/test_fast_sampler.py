"""The default (unseeded) path's Gaussians: Box–Muller float32 draws from uniform words.

Unseeded mechanisms get a fresh :class:`SecureRandom` (AES-256-CTR under an OS key) per call,
and Laplace / Mahalanobis draw their directions by Box–Muller from its words, the radius folded
in, 128 rows at a time; seeded mechanisms keep numpy's own ``standard_normal`` (their numbers are
unchanged). These tests pass a ``SecureRandom`` with a fixed test key (or a plain seeded
``Generator``, which takes the same path) as ``rng=`` so the default path is exercised
reproducibly, with the same statistical checks as tests/test_mechanisms.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from private_vectors.mechanisms import LaplaceMechanism, MahalanobisMechanism, unit_sphere
from private_vectors.mechanisms.base import CHUNK, add_radial_noise
from private_vectors.random import SecureRandom, resolve_random_state

ALPHA = 1e-3


def _key(i: int) -> SecureRandom:
    return SecureRandom(bytes([i]) * 32)


@pytest.mark.parametrize("n", [48, 33])
def test_box_muller_rows_are_independent_standard_normals(n: int) -> None:
    m = 3 * CHUNK + 5  # several chunks and a short last one
    radius = np.random.default_rng(0).gamma(n, 1.0, m)
    X = np.zeros((m, n), dtype=np.float32)
    add_radial_noise(X, _key(1), radius)
    assert X.dtype == np.float32 and np.all(np.isfinite(X))
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), radius, rtol=2e-6)
    # a row times chi_n / radius is n i.i.d. N(0, 1): test the pooled coordinates
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    z = (U * np.sqrt(np.random.default_rng(1).chisquare(n, m))[:, None]).ravel().astype(np.float64)
    assert stats.kstest(z, "norm").pvalue > ALPHA
    h = (n + 1) // 2  # the two members of a Box–Muller pair (columns j and h + j): uncorrelated, also in square
    a, b = U[:, : n - h].ravel(), U[:, h:].ravel()
    assert abs(np.corrcoef(a, b)[0, 1]) < 4 / math.sqrt(a.size)
    assert abs(np.corrcoef(a**2, b**2)[0, 1]) < 5 / math.sqrt(a.size)


def test_secure_random_is_the_aes_ctr_keystream_and_never_pickled() -> None:
    import pickle

    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    key = bytes(range(32))
    stream = Cipher(algorithms.AES(key), modes.CTR(bytes(16))).encryptor().update(bytes(4 * 20))
    src = SecureRandom(key)  # the first 4 words seed its numpy generator
    np.testing.assert_array_equal(src.words(16), np.frombuffer(stream[16:], dtype="<u4"))
    assert "<secret>" in repr(src) and key.hex() not in repr(src)
    with pytest.raises(TypeError, match="never pickled"):
        pickle.dumps(src)
    a, b = SecureRandom().words(8), SecureRandom().words(8)  # fresh OS keys
    assert not np.array_equal(a, b)


def test_default_source_takes_the_fast_path_and_seeded_sources_do_not() -> None:
    fresh = resolve_random_state(None).source()
    assert isinstance(fresh, SecureRandom)
    seeded = resolve_random_state(7).source()
    assert type(seeded) is not np.random.Generator
    expected = np.random.default_rng(7).standard_normal((3, 5), dtype=np.float32)
    got = unit_sphere(seeded, 3, 5)
    np.testing.assert_allclose(got, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=1e-6)


def test_unit_sphere_fast_path_is_uniform() -> None:
    n, m = 8, 20000
    U = unit_sphere(_key(2), m, n).astype(np.float64)
    assert np.allclose(np.linalg.norm(U, axis=1), 1.0, atol=1e-6)
    assert np.abs(U.mean(axis=0)).max() < 4 / math.sqrt(m)
    assert np.allclose(U.T @ U / m, np.eye(n) / n, atol=0.01)
    assert stats.kstest((U[:, 0] + 1) / 2, stats.beta((n - 1) / 2, (n - 1) / 2).cdf).pvalue > ALPHA


@pytest.mark.parametrize("n,eps,unit", [(16, 2.0, 1.0), (768, 40.0, 0.5)])
def test_laplace_radius_is_gamma_on_the_fast_path(n: int, eps: float, unit: float) -> None:
    mech = LaplaceMechanism(epsilon=eps, unit=unit)
    Z = mech.perturb(np.zeros((4000, n)), rng=_key(3)).astype(np.float64)
    assert stats.kstest(np.linalg.norm(Z, axis=1), stats.gamma(a=n, scale=unit / eps).cdf).pvalue > ALPHA


def test_mahalanobis_diagonal_on_the_fast_path() -> None:
    n, eps = 64, 5.0
    rng = np.random.default_rng(0)
    mask = np.zeros(n)
    mask[rng.choice(n, n // 8, replace=False)] = rng.uniform(0.5, 1.0, n // 8)
    mech = MahalanobisMechanism(epsilon=eps, sigma=mask)
    diag = mech.variance_diagonal()
    Z = mech.perturb(np.zeros((30000, n)), rng=_key(4)).astype(np.float64)
    assert stats.kstest(mech.mahalanobis_norm(Z), stats.gamma(a=n, scale=1 / eps).cdf).pvalue > ALPHA
    ey2 = n * (n + 1) / eps**2
    active = diag > 1e-3
    assert np.allclose(Z[:, active].var(axis=0), ey2 * diag[active] / n, rtol=0.08)
    assert np.all(Z[:, ~active].var(axis=0) < ey2 * 1e-3 / n)


def test_mahalanobis_subspace_on_the_fast_path() -> None:
    n, k, share, eps = 40, 5, 0.9, 3.0
    V = np.random.default_rng(2).standard_normal((n, k))
    mech = MahalanobisMechanism.from_subspace(epsilon=eps, basis=V, share=share)
    Z = mech.perturb(np.zeros((60000, n)), rng=_key(6)).astype(np.float64)
    ey2 = n * (n + 1) / eps**2
    target = mech.covariance()
    emp = np.cov(Z.T) * n / ey2
    assert np.abs(emp - target).max() < 0.06 * np.abs(target).max()
    assert stats.kstest(mech.mahalanobis_norm(Z), stats.gamma(a=n, scale=1 / eps).cdf).pvalue > ALPHA


def test_a_plain_generator_takes_the_same_path() -> None:
    n = 10
    Z = LaplaceMechanism(epsilon=2.0).perturb(np.zeros((4000, n)), rng=np.random.default_rng(8)).astype(np.float64)
    assert stats.kstest(np.linalg.norm(Z, axis=1), stats.gamma(a=n, scale=0.5).cdf).pvalue > ALPHA
    U = unit_sphere(np.random.default_rng(9), 3, n)
    np.testing.assert_array_equal(U, unit_sphere(np.random.default_rng(9), 3, n))


@pytest.mark.parametrize("form", ["laplace", "diagonal", "subspace", "seeded"])
def test_noise_added_from_a_read_only_input_equals_input_plus_the_same_noise(form: str) -> None:
    """Laplace and Mahalanobis copy their input into the output chunk by chunk: the result is the
    float32 input plus exactly the noise the same stream gives on zeros, and the input is untouched."""
    n, m = 24, 2 * CHUNK + 7
    X = np.random.default_rng(5).standard_normal((m, n))
    X.flags.writeable = False  # the mechanism may only read it
    mask = np.linspace(0.0, 1.0, n)
    make = {"laplace": lambda: LaplaceMechanism(epsilon=3.0),
            "diagonal": lambda: MahalanobisMechanism(epsilon=3.0, sigma=mask),
            "subspace": lambda: MahalanobisMechanism.from_subspace(
                epsilon=3.0, basis=np.random.default_rng(6).standard_normal((n, 3))),
            "seeded": lambda: LaplaceMechanism(epsilon=3.0, random_state=11)}[form]
    rng = (lambda: None) if form == "seeded" else (lambda: _key(9))
    noisy = make().perturb(X, rng=rng())
    noise = make().perturb(np.zeros((m, n)), rng=rng())
    assert noisy.dtype == np.float32
    np.testing.assert_allclose(noisy, X.astype(np.float32) + noise, rtol=0, atol=1e-6)
    assert not np.array_equal(noisy, X.astype(np.float32))
