"""The default (unseeded) path's Gaussians: Box–Muller float32 draws (issue 15, speed).

Unseeded mechanisms get a fresh plain numpy ``Generator`` per call, and ``unit_sphere`` then
draws its Gaussians with :func:`gaussians_box_muller`; seeded mechanisms keep numpy's own
``standard_normal`` (their numbers are unchanged). These tests pass a plain seeded
``Generator`` as ``rng=`` so the default path is exercised reproducibly, with the same
statistical checks as tests/test_mechanisms.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from private_vectors.mechanisms import LaplaceMechanism, MahalanobisMechanism, unit_sphere
from private_vectors.mechanisms.base import gaussians_box_muller
from private_vectors.random import resolve_random_state

ALPHA = 1e-3


def test_box_muller_draws_are_standard_normal_and_independent() -> None:
    g = gaussians_box_muller(np.random.default_rng(0), 1001, 33)  # odd total: one draw discarded
    assert g.shape == (1001, 33) and g.dtype == np.float32 and np.all(np.isfinite(g))
    z = g.ravel().astype(np.float64)
    assert stats.kstest(z, "norm").pvalue > ALPHA
    assert abs(z.mean()) < 4 / math.sqrt(z.size) and abs(z.var() - 1) < 0.02
    half = (z.size + 1) // 2  # the two members of a Box–Muller pair: uncorrelated, also in square
    a, b = z[: z.size - half], z[half:]
    assert abs(np.corrcoef(a, b)[0, 1]) < 4 / math.sqrt(a.size)
    assert abs(np.corrcoef(a**2, b**2)[0, 1]) < 4 / math.sqrt(a.size)


def test_default_source_takes_the_fast_path_and_seeded_sources_do_not() -> None:
    fresh = resolve_random_state(None).source()
    assert type(fresh) is np.random.Generator
    seeded = resolve_random_state(7).source()
    assert type(seeded) is not np.random.Generator
    expected = np.random.default_rng(7).standard_normal((3, 5), dtype=np.float32)
    got = unit_sphere(seeded, 3, 5)
    np.testing.assert_allclose(got, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=1e-6)


def test_unit_sphere_fast_path_is_uniform() -> None:
    n, m = 8, 20000
    U = unit_sphere(np.random.default_rng(1), m, n).astype(np.float64)
    assert np.allclose(np.linalg.norm(U, axis=1), 1.0, atol=1e-6)
    assert np.abs(U.mean(axis=0)).max() < 4 / math.sqrt(m)
    assert np.allclose(U.T @ U / m, np.eye(n) / n, atol=0.01)
    assert stats.kstest((U[:, 0] + 1) / 2, stats.beta((n - 1) / 2, (n - 1) / 2).cdf).pvalue > ALPHA


@pytest.mark.parametrize("n,eps,unit", [(16, 2.0, 1.0), (768, 40.0, 0.5)])
def test_laplace_radius_is_gamma_on_the_fast_path(n: int, eps: float, unit: float) -> None:
    mech = LaplaceMechanism(epsilon=eps, unit=unit)
    Z = mech.perturb(np.zeros((4000, n)), rng=np.random.default_rng(2)).astype(np.float64)
    assert stats.kstest(np.linalg.norm(Z, axis=1), stats.gamma(a=n, scale=unit / eps).cdf).pvalue > ALPHA


def test_mahalanobis_diagonal_on_the_fast_path() -> None:
    n, eps = 64, 5.0
    rng = np.random.default_rng(0)
    mask = np.zeros(n)
    mask[rng.choice(n, n // 8, replace=False)] = rng.uniform(0.5, 1.0, n // 8)
    mech = MahalanobisMechanism(epsilon=eps, sigma=mask)
    diag = mech.variance_diagonal()
    Z = mech.perturb(np.zeros((30000, n)), rng=np.random.default_rng(4)).astype(np.float64)
    assert stats.kstest(mech.mahalanobis_norm(Z), stats.gamma(a=n, scale=1 / eps).cdf).pvalue > ALPHA
    ey2 = n * (n + 1) / eps**2
    active = diag > 1e-3
    assert np.allclose(Z[:, active].var(axis=0), ey2 * diag[active] / n, rtol=0.08)
    assert np.all(Z[:, ~active].var(axis=0) < ey2 * 1e-3 / n)


def test_mahalanobis_subspace_on_the_fast_path() -> None:
    n, k, share, eps = 40, 5, 0.9, 3.0
    V = np.random.default_rng(2).standard_normal((n, k))
    mech = MahalanobisMechanism.from_subspace(epsilon=eps, basis=V, share=share)
    Z = mech.perturb(np.zeros((60000, n)), rng=np.random.default_rng(6)).astype(np.float64)
    ey2 = n * (n + 1) / eps**2
    target = mech.covariance()
    emp = np.cov(Z.T) * n / ey2
    assert np.abs(emp - target).max() < 0.06 * np.abs(target).max()
    assert stats.kstest(mech.mahalanobis_norm(Z), stats.gamma(a=n, scale=1 / eps).cdf).pvalue > ALPHA
