"""Noise-aware retrieval (issue 7): query transforms with a planted subspace, spaces, no effect on storage."""

from __future__ import annotations

import numpy as np
import pytest

from private_vectors import PrivateEmbedding
from private_vectors.errors import InvalidParameterError
from private_vectors.mechanisms import LaplaceMechanism, MahalanobisMechanism
from private_vectors.retrieval import (
    IdentityTransform,
    ProjectionTransform,
    WienerTransform,
    build_query_transform,
    noise_directions,
    scores,
    top_k,
)

N, K, DOCS, QUERIES = 64, 8, 400, 60


def _planted(seed: int = 0, concept_weight: float = 0.5):
    """Docs = topic (off a planted subspace V) + a concept part in V (e.g. a name); each query is
    a near-duplicate of one document's topic with its own, unrelated concept part."""
    rng = np.random.default_rng(seed)
    V, _ = np.linalg.qr(rng.standard_normal((N, K)))

    def off_v(M):
        M = M - (M @ V) @ V.T
        return M / np.linalg.norm(M, axis=1, keepdims=True)

    def in_v(m):
        C = rng.standard_normal((m, K)) @ V.T
        return C / np.linalg.norm(C, axis=1, keepdims=True)

    T = off_v(rng.standard_normal((DOCS, N)))
    X = T + concept_weight * in_v(DOCS)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    targets = rng.choice(DOCS, QUERIES, replace=False)
    Q = off_v(T[targets] + 0.3 * rng.standard_normal((QUERIES, N)) / np.sqrt(N)) + concept_weight * in_v(QUERIES)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    return V, X, Q


def _overlap(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean([len(set(x) & set(y)) / len(x) for x, y in zip(a, b, strict=True)]))


def test_projected_queries_recover_clean_rankings_with_a_planted_subspace():
    V, X, Q = _planted()
    mech = MahalanobisMechanism.from_subspace(epsilon=5, basis=V, share=0.9, unit=1 / np.sqrt(N), random_state=1)
    Z = mech.perturb(X)
    clean = top_k(Q, X, 10)
    plain = top_k(Q, Z, 10)
    projected = top_k(build_query_transform("project", mech).apply(Q), Z, 10)
    wiener = top_k(build_query_transform("wiener", mech).apply(Q), Z, 10)
    o_plain, o_proj, o_wiener = _overlap(clean, plain), _overlap(clean, projected), _overlap(clean, wiener)
    assert o_proj > o_plain + 0.1 and o_wiener > o_plain + 0.1  # the transform is what recovers the ranking
    # top-1: the near-duplicate document comes back with the transform, mostly not without
    assert np.mean(projected[:, 0] == clean[:, 0]) >= 0.95
    assert np.mean(wiener[:, 0] == clean[:, 0]) >= 0.95
    assert np.mean(plain[:, 0] == clean[:, 0]) <= 0.7
    # on the noisy index, projected queries rank much as on the clean index (only the 10% of the
    # noise trace left outside V reorders near-ties among unrelated documents)
    assert _overlap(top_k(build_query_transform("project", mech).apply(Q), X, 10), projected) >= 0.5


def test_auto_picks_wiener_for_non_spherical_sigma_identity_for_spherical():
    rng = np.random.default_rng(0)
    V, _ = np.linalg.qr(rng.standard_normal((N, K)))
    sub = MahalanobisMechanism.from_subspace(epsilon=10, basis=V, unit=0.125)
    assert isinstance(build_query_transform("auto", sub), WienerTransform)
    mask = np.zeros(N)
    mask[:8] = 1
    diag = MahalanobisMechanism(epsilon=10, sigma=mask, unit=0.125)
    assert isinstance(build_query_transform("auto", diag), WienerTransform)
    assert isinstance(build_query_transform("auto", LaplaceMechanism(epsilon=10)), IdentityTransform)
    assert isinstance(build_query_transform("auto", MahalanobisMechanism(epsilon=10, sigma=np.ones(N))),
                      IdentityTransform)
    with pytest.raises(InvalidParameterError, match="query_transform"):
        build_query_transform("project", LaplaceMechanism(epsilon=10))
    with pytest.raises(InvalidParameterError, match="query_transform"):
        build_query_transform("sideways", sub)
    # projection for a diagonal mask removes exactly the masked (noisy) coordinates
    proj = build_query_transform("project", diag)
    assert isinstance(proj, ProjectionTransform) and proj.basis.shape == (N, 8)
    q = proj.apply(np.ones(N))
    assert np.allclose(q[:8], 0, atol=1e-6) and np.all(q[8:] > 0)


def test_wiener_weights_follow_noise_and_tend_to_projection_and_identity():
    rng = np.random.default_rng(0)
    V, _ = np.linalg.qr(rng.standard_normal((N, K)))
    q = rng.standard_normal(N)
    proj = ProjectionTransform(V).apply(q)
    cos = []
    for eps in (0.5, 5, 50, 5000):
        mech = MahalanobisMechanism.from_subspace(epsilon=eps, basis=V, unit=0.125)
        Nv, _U, _rest = noise_directions(mech)
        assert np.allclose(Nv, (N + 1) * (0.125 / eps) ** 2 * mech._ab[0])
        w = build_query_transform("wiener", mech)
        out = w.apply(q)
        assert np.linalg.norm(out) == pytest.approx(np.linalg.norm(q), rel=1e-5)
        cos.append(float(out @ proj / (np.linalg.norm(out) * np.linalg.norm(proj))))
    assert cos[0] > 0.999  # heavy noise: Wiener ≈ projection
    assert cos == sorted(cos, reverse=True)
    big = build_query_transform("wiener", MahalanobisMechanism.from_subspace(epsilon=1e6, basis=V, unit=0.125))
    np.testing.assert_allclose(big.apply(q), q, rtol=1e-3, atol=1e-4)  # no noise: identity


def test_empirical_noise_variance_matches_noise_directions():
    rng = np.random.default_rng(1)
    V, _ = np.linalg.qr(rng.standard_normal((N, K)))
    mech = MahalanobisMechanism.from_subspace(epsilon=10, basis=V, unit=0.125, random_state=2)
    noise = mech.perturb(np.zeros((20000, N)))
    Nv, _, rest = noise_directions(mech)
    inside = np.var(noise @ V, axis=0).mean()
    W = np.linalg.qr(np.hstack([V, rng.standard_normal((N, 4))]))[0][:, K:]
    outside = np.var(noise @ W, axis=0).mean()
    assert inside == pytest.approx(Nv[0], rel=0.05)
    assert outside == pytest.approx(rest, rel=0.1)


def test_spaces_agree_with_brute_force_and_ip_resists_noise_norm_spread():
    rng = np.random.default_rng(0)
    Q, D = rng.standard_normal((3, 16)), rng.standard_normal((20, 16))
    np.testing.assert_allclose(scores(Q, D, "ip"), Q @ D.T)
    l2 = -((Q[:, None, :] - D[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(scores(Q, D, "l2"), l2, rtol=1e-10)
    cos = (Q @ D.T) / np.outer(np.linalg.norm(Q, axis=1), np.linalg.norm(D, axis=1))
    np.testing.assert_allclose(scores(Q, D, "cosine"), cos)
    with pytest.raises(InvalidParameterError, match="space"):
        scores(Q, D, "hamming")
    # spherical noise of norm ~2 on unit vectors: L2 ranking is dominated by ||z||, IP is not
    _V, X, Qp = _planted(3)
    Z = LaplaceMechanism(epsilon=10, unit=1 / np.sqrt(N), random_state=4).perturb(X)
    clean = top_k(Qp, X, 10)
    assert _overlap(clean, top_k(Qp, Z, 10, "ip")) > _overlap(clean, top_k(Qp, Z, 10, "l2")) + 0.05


def test_transform_never_touches_stored_vectors():
    from tests.test_embedding import StubConcept

    concept = StubConcept(dim=64, k=8)
    docs = ["Maria Lopez flew to Madrid", "cough and fever", "revenue grew", "snow closes the trail"]
    stored = {}
    for kind in ("none", "project", "wiener", "auto"):
        pe = PrivateEmbedding(model="fake", concept=concept, eps=10, key="same-key-0123456789", query_transform=kind)
        stored[kind] = pe.embed_array(docs)
        q = np.asarray(pe.embed_query("cough fever"))
        clean_q = pe.encoder.encode(["cough fever"])[0]
        if kind == "none":
            np.testing.assert_allclose(q, clean_q, atol=1e-6)
        else:
            assert np.abs(q @ concept.basis).max() < (1e-5 if kind == "project" else 0.2)
            assert np.linalg.norm(q) == pytest.approx(1.0, rel=1e-4)
    for kind in ("project", "wiener", "auto"):
        np.testing.assert_array_equal(stored[kind], stored["none"])


def test_transform_applies_after_query_noise():
    from tests.test_embedding import StubConcept

    concept = StubConcept(dim=64, k=8)
    pe = PrivateEmbedding(model="fake", concept=concept, eps=10, query="noised", query_eps=5, query_transform="project")
    q = np.asarray(pe.embed_query("cough fever"))
    assert np.abs(q @ concept.basis).max() < 1e-5  # the noised query is projected afterwards
