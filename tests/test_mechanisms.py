"""Statistical tests of the noise mechanisms: distributions, not cosmetics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from private_vectors.errors import InvalidParameterError, InvalidTypeError, PrivateVectorsError
from private_vectors.mechanisms import (
    GaussianMechanism,
    IdentityMechanism,
    LaplaceMechanism,
    MahalanobisMechanism,
    PurkayasthaMechanism,
)

ALPHA = 1e-3  # KS tests: false-failure rate per test


def _ks_pvalue(sample: np.ndarray, cdf) -> float:
    return float(stats.kstest(sample, cdf).pvalue)


@pytest.mark.parametrize("n,eps,unit", [(16, 2.0, 1.0), (384, 10.0, 1 / math.sqrt(384)), (768, 40.0, 0.5)])
def test_laplace_radius_is_gamma(n, eps, unit):
    mech = LaplaceMechanism(epsilon=eps, unit=unit, random_state=1)
    X = np.zeros((4000, n))
    Z = mech.perturb(X).astype(np.float64)
    radius = np.linalg.norm(Z, axis=1)
    assert _ks_pvalue(radius, stats.gamma(a=n, scale=unit / eps).cdf) > ALPHA


def test_laplace_directions_uniform():
    n = 8
    mech = LaplaceMechanism(epsilon=1.0, random_state=2)
    Z = mech.perturb(np.zeros((20000, n))).astype(np.float64)
    U = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    # mean ≈ 0, second moment ≈ I/n
    assert np.abs(U.mean(axis=0)).max() < 4 / math.sqrt(20000)
    assert np.allclose(U.T @ U / len(U), np.eye(n) / n, atol=0.01)
    # projection on a fixed axis: (u1 + 1)/2 ~ Beta((n-1)/2, (n-1)/2)
    assert _ks_pvalue((U[:, 0] + 1) / 2, stats.beta((n - 1) / 2, (n - 1) / 2).cdf) > ALPHA


def test_laplace_density_ratio_bounded_by_epsilon():
    """Empirical privacy check (the idea of diffprivlib's neighbour tests), in 1-D where
    densities are estimable: P(Z∈B|x)/P(Z∈B|x') ≤ exp(ε|x−x'|) for interval events B."""
    eps, d = 1.0, 0.5
    mech = LaplaceMechanism(epsilon=eps, random_state=3)
    za = mech.perturb(np.zeros((200000, 1)))[:, 0]
    zb = mech.perturb(np.full((200000, 1), d))[:, 0]
    edges = np.linspace(-3, 3.5, 14)
    ha, _ = np.histogram(za, edges)
    hb, _ = np.histogram(zb, edges)
    ratio = np.maximum(ha / hb, hb / ha)
    assert np.all(ratio <= math.exp(eps * d) * 1.08)  # 8% sampling slack
    assert ratio.max() > math.exp(eps * d) * 0.9  # and the bound is actually reached


def _diag_mask(n, rng):
    mask = np.zeros(n)
    mask[rng.choice(n, n // 8, replace=False)] = rng.uniform(0.5, 1.0, n // 8)
    return mask


def test_mahalanobis_norm_is_gamma_and_variance_follows_sigma():
    n, eps = 64, 5.0
    rng = np.random.default_rng(0)
    mask = _diag_mask(n, rng)
    mech = MahalanobisMechanism(epsilon=eps, sigma=mask, random_state=4)
    diag = mech.variance_diagonal()
    assert diag.sum() == pytest.approx(n)  # trace normalised to n
    assert np.all(diag > 0)  # δ floor
    Z = mech.perturb(np.zeros((30000, n))).astype(np.float64)
    assert _ks_pvalue(mech.mahalanobis_norm(Z), stats.gamma(a=n, scale=1 / eps).cdf) > ALPHA
    # per-dimension variance ∝ Σ_ii: Var(Z_i) = E[Y²]·Σ_ii/n
    ey2 = n * (n + 1) / eps**2
    active = diag > 1e-3
    assert np.allclose(Z[:, active].var(axis=0), ey2 * diag[active] / n, rtol=0.08)
    assert np.all(Z[:, ~active].var(axis=0) < ey2 * 1e-3 / n)


def test_mahalanobis_full_sigma_covariance_recovered():
    n, eps = 12, 3.0
    rng = np.random.default_rng(1)
    A = rng.standard_normal((n, n))
    sigma = A @ A.T + 0.5 * np.eye(n)
    mech = MahalanobisMechanism(epsilon=eps, sigma=sigma, random_state=5)
    target = sigma * n / np.trace(sigma)
    assert np.allclose(mech.covariance(), target)
    Z = mech.perturb(np.zeros((60000, n))).astype(np.float64)
    ey2 = n * (n + 1) / eps**2
    emp = np.cov(Z.T) * n / ey2
    assert np.abs(emp - target).max() < 0.06 * np.abs(target).max()
    assert _ks_pvalue(mech.mahalanobis_norm(Z), stats.gamma(a=n, scale=1 / eps).cdf) > ALPHA


def test_mahalanobis_subspace_form_matches_dense():
    n, k, share = 40, 5, 0.9
    rng = np.random.default_rng(2)
    V = rng.standard_normal((n, k))
    sub = MahalanobisMechanism.from_subspace(epsilon=2.0, basis=V, share=share, random_state=6)
    Q, _ = np.linalg.qr(V)
    a, b = share * n / k, (1 - share) * n / (n - k)
    dense = a * Q @ Q.T + b * (np.eye(n) - Q @ Q.T)
    assert np.allclose(sub.covariance(), dense)
    Z = sub.perturb(np.zeros((40000, n))).astype(np.float64)
    inside = np.sum((Z @ Q) ** 2, axis=1).mean()
    total = np.sum(Z**2, axis=1).mean()
    assert inside / total == pytest.approx(share, abs=0.01)
    assert _ks_pvalue(sub.mahalanobis_norm(Z), stats.gamma(a=n, scale=0.5).cdf) > ALPHA


def _angle_cdf_reference(n: int, rate: float):
    """Independent reference: quad-integrated CDF of exp(−rate·θ)·sin^{n−2}θ (log-shifted)."""
    mode = math.atan2(n - 2, rate)
    logmax = -rate * mode + (n - 2) * math.log(math.sin(mode)) if n > 2 else 0.0

    def pdf(t):
        if t <= 0 or t >= math.pi:
            return 0.0
        return math.exp(-rate * t + (n - 2) * math.log(math.sin(t)) - logmax)

    width = math.sqrt((n - 2) / ((n - 2) ** 2 + rate**2))
    lo, hi = max(0.0, mode - 80 * width), min(math.pi, mode + 80 * width)
    total = integrate.quad(pdf, lo, hi, points=[mode], limit=400, epsabs=0, epsrel=1e-10)[0]

    def cdf(x):
        x = np.atleast_1d(x)
        out = np.empty_like(x, dtype=float)
        for i, v in enumerate(x):
            v = min(max(v, lo), hi)
            pts = [mode] if lo < mode < v else None
            out[i] = integrate.quad(pdf, lo, v, points=pts, limit=400, epsabs=0, epsrel=1e-9)[0] / total
        return out

    return cdf


@pytest.mark.parametrize("n", [16, 384, 768, 1024])
@pytest.mark.parametrize("eps", [1.0, 30.0, 300.0, 1000.0, 10000.0])
def test_purkayastha_angles_exact(n, eps):
    mech = PurkayasthaMechanism(epsilon=eps, random_state=7)
    x = np.zeros(n)
    x[0] = 1.0
    Z = mech.perturb(np.tile(x, (1500, 1))).astype(np.float64)
    assert np.allclose(np.linalg.norm(Z, axis=1), 1.0, atol=1e-5)
    theta = np.arccos(np.clip(Z[:, 0], -1, 1))
    ref = _angle_cdf_reference(n, eps)
    # float32 output limits angle resolution near 0: compare away from that floor
    if np.median(theta) > 5e-3:
        assert _ks_pvalue(theta, ref) > ALPHA
    # the sampler itself, free of float32 rounding
    theta64 = mech.sample_angles(n, 3000, np.random.default_rng(8))
    assert _ks_pvalue(theta64, ref) > ALPHA


def test_purkayastha_direction_uniform_around_input():
    n = 6
    mech = PurkayasthaMechanism(epsilon=2.0, random_state=9)
    x = np.zeros(n)
    x[0] = 1.0
    Z = mech.perturb(np.tile(x, (20000, 1))).astype(np.float64)
    ortho = Z[:, 1:] / np.linalg.norm(Z[:, 1:], axis=1, keepdims=True)
    assert np.abs(ortho.mean(axis=0)).max() < 0.03
    assert np.allclose(ortho.T @ ortho / len(ortho), np.eye(n - 1) / (n - 1), atol=0.01)


def test_purkayastha_keeps_norm_of_non_unit_inputs():
    mech = PurkayasthaMechanism(epsilon=50.0, random_state=1)
    X = np.random.default_rng(0).standard_normal((10, 32)) * 3
    Z = mech.perturb(X)
    assert np.allclose(np.linalg.norm(Z, axis=1), np.linalg.norm(X, axis=1), rtol=1e-5)


def test_gaussian_calibration_and_variance():
    mech = GaussianMechanism(epsilon=0.5, delta=1e-5, sensitivity=2.0, calibration="classic", random_state=10)
    expected = 2.0 * math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5
    assert mech.sigma == pytest.approx(expected)
    Z = mech.perturb(np.zeros((20000, 3))).astype(np.float64)
    assert _ks_pvalue(Z[:, 0] / expected, stats.norm.cdf) > ALPHA
    assert GaussianMechanism(sigma=0.3).sigma == 0.3


def test_identity_returns_copy():
    X = np.arange(6, dtype=np.float64).reshape(2, 3)
    out = IdentityMechanism().perturb(X)
    assert out.dtype == np.float32 and np.array_equal(out, X.astype(np.float32))


ALL = [
    lambda rs: LaplaceMechanism(epsilon=5.0, random_state=rs),
    lambda rs: MahalanobisMechanism(epsilon=5.0, sigma=np.linspace(0, 1, 8), random_state=rs),
    lambda rs: MahalanobisMechanism.from_subspace(epsilon=5.0, basis=np.eye(8)[:, :2], random_state=rs),
    lambda rs: PurkayasthaMechanism(epsilon=5.0, random_state=rs),
    lambda rs: GaussianMechanism(sigma=0.1, random_state=rs),
]


@pytest.mark.parametrize("make", ALL)
def test_shapes_kinds_and_seeds(make):
    X = np.random.default_rng(0).standard_normal((5, 8))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    a, b = make(11), make(11)
    out = a.perturb(X)
    assert out.shape == (5, 8) and out.dtype == np.float32
    assert np.array_equal(out, b.perturb(X))  # same seed ⇒ same output
    assert a.perturb(X[0]).shape == (8,)
    t = a.perturb(torch.tensor(X))
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.shape == (5, 8)
    c, d = make(None), make(None)
    assert not np.array_equal(c.perturb(X), d.perturb(X))  # no seed ⇒ fresh noise
    desc = c.describe(dim=8)
    assert desc["name"] == c.name and desc["seeded"] is False
    assert make(3).describe(dim=8)["randomness"] == "seeded: for testing only"
    assert "indistinguishability_radius" in desc and "expected_noise_norm" in desc


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "10", None, True])
def test_bad_epsilon_is_refused(bad):
    with pytest.raises(PrivateVectorsError) as info:
        LaplaceMechanism(epsilon=bad)
    assert "epsilon" in str(info.value)
    assert isinstance(info.value, (InvalidParameterError, InvalidTypeError))


@pytest.mark.parametrize("X", [np.array([[np.nan, 1.0]]), np.array([np.inf, 0.0]), "abc", None,
                               np.zeros((2, 2, 2)), [[1, 2], [3]]])
def test_bad_vectors_are_refused(X):
    with pytest.raises(PrivateVectorsError) as info:
        LaplaceMechanism(epsilon=1.0).perturb(X)
    assert "X" in str(info.value)


@pytest.mark.parametrize("make", [lambda: LaplaceMechanism(epsilon=1.0),
                                  lambda: MahalanobisMechanism(epsilon=1.0, sigma=np.ones(3)),
                                  lambda: GaussianMechanism(sigma=0.1)])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_names_x_and_its_first_bad_row(make, bad):
    X = np.ones((5, 3), dtype=np.float32)
    X[3, 1] = bad
    X[4, 0] = bad
    with pytest.raises(InvalidParameterError, match="the first is row 3") as info:
        make().perturb(X)
    assert info.value.parameter == "X"


def test_huge_finite_input_is_not_taken_for_non_finite():
    big = np.full((4, 3), 3e38, dtype=np.float32)  # its sum overflows float32; every element is finite
    assert np.all(IdentityMechanism().perturb(big) == big)
    with pytest.raises(InvalidParameterError) as info:
        LaplaceMechanism(epsilon=1e-40).perturb(big)  # the noise overflows: epsilon is named, not X
    assert info.value.parameter == "epsilon"


def test_bad_sigma_is_refused():
    with pytest.raises(InvalidParameterError, match="positive-definite"):
        MahalanobisMechanism(epsilon=1.0, sigma=np.diag([1.0, 0.0, 1.0]) - np.eye(3) * 0.5)
    with pytest.raises(InvalidParameterError, match="non-negative"):
        MahalanobisMechanism(epsilon=1.0, sigma=np.array([1.0, -1.0]))
    with pytest.raises(InvalidParameterError, match="dimension 3"):
        MahalanobisMechanism(epsilon=1.0, sigma=np.ones(3)).perturb(np.ones(4))
    with pytest.raises(InvalidTypeError):
        MahalanobisMechanism(epsilon=1.0, sigma="diag")
