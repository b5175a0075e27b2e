"""PrivateEmbedding: mechanisms, unit, keyed noise, query policies, config, errors, report."""

from __future__ import annotations

import asyncio
import json
import math

import numpy as np
import pytest

from private_vectors import PrivateEmbedding
from private_vectors.config import KEY_ENV, check_config_compatible
from private_vectors.encoders import FakeEncoder
from private_vectors.errors import (
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
    PrivateVectorsError,
)
from private_vectors.mechanisms import LaplaceMechanism, MahalanobisMechanism

DOCS = ["Maria Lopez flew to Madrid on Monday", "the patient had a cough and fever",
        "quarterly revenue grew by twelve percent", "the trail closes after snowfall"]


class StubConcept:
    """A duck-typed FittedConcept with a planted subspace (until concepts land)."""

    name = "planted"
    estimator = "subspace"

    def __init__(self, dim: int = 64, k: int = 8, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.basis, _ = np.linalg.qr(rng.standard_normal((dim, k)))
        self.dim = dim
        self.fingerprint = f"planted-{dim}-{k}-{seed}"

    def mechanism(self, *, epsilon, unit, random_state=None):
        return MahalanobisMechanism.from_subspace(epsilon=epsilon, basis=self.basis, share=0.9, unit=unit,
                                                  random_state=random_state)

    def noise_subspace(self):
        return self.basis

    def reference(self):
        return {"name": self.name, "fingerprint": self.fingerprint}

    def check_encoder(self, encoder):
        assert encoder.dim == self.dim


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


def test_default_unit_and_noise_norm_match_the_documented_calibration():
    pe = PrivateEmbedding(model="fake:384", eps=10, random_state=1, store_geometry="none")  # the mechanism's own noise
    assert pe.unit == pytest.approx(1 / math.sqrt(384))
    X = np.asarray(pe.encoder.encode(DOCS * 50), dtype=np.float64)
    Z = pe.embed_array(DOCS * 50)
    norms = np.linalg.norm(Z - X, axis=1)
    assert norms.mean() == pytest.approx(384 / (10 * math.sqrt(384)), rel=0.03)  # ≈ 1.96
    pe40 = PrivateEmbedding(model="fake:384", eps=40, random_state=1, store_geometry="none")  # the mechanism's own noise
    assert np.linalg.norm(pe40.embed_array(DOCS) - pe40.encoder.encode(DOCS), axis=1).mean() == pytest.approx(
        0.49, rel=0.1)
    assert pe.get_config()["unit"] == pytest.approx(1 / math.sqrt(384))
    assert pe.privacy_report()["unit"] == pytest.approx(1 / math.sqrt(384))


@pytest.mark.parametrize("mech", ["laplace", "purkayastha", "gaussian", "none"])
def test_each_named_mechanism_perturbs_with_its_own_scale(mech):
    pe = PrivateEmbedding(model="fake", eps=10, mechanism=mech, random_state=0)
    X = pe.encoder.encode(DOCS)
    Z = pe.embed_array(DOCS)
    assert Z.shape == X.shape and Z.dtype == np.float32
    dist = np.linalg.norm(Z - X, axis=1)
    if mech == "none":
        assert np.allclose(dist, 0)
    else:
        assert dist.min() > 0.05
    if mech == "purkayastha":
        assert np.allclose(np.linalg.norm(Z, axis=1), 1, atol=1e-5)
    if mech == "gaussian":
        sigma = pe.mechanism.sigma
        # the analytic calibration (Balle & Wang 2018) at ε/unit, δ = 1e-5, sensitivity 2
        from private_vectors.mechanisms.gaussian import analytic_gaussian_sigma

        assert sigma == pytest.approx(analytic_gaussian_sigma(10 / pe.unit, 1e-5, 2.0))


def test_default_mechanism_is_mahalanobis_with_concept_laplace_without():
    assert PrivateEmbedding(model="fake").mechanism.name == "laplace"
    pe = PrivateEmbedding(model="fake", concept=StubConcept())
    assert pe.mechanism.name == "mahalanobis"
    assert pe.query_transform.name == "wiener" and pe.space == "ip"
    assert PrivateEmbedding(model="fake").space == "cosine"  # spherical noise: measured best
    with pytest.raises(InvalidParameterError, match="concept"):
        PrivateEmbedding(model="fake", mechanism="mahalanobis")


def test_mechanism_instance_is_used_as_given():
    mech = LaplaceMechanism(epsilon=1000.0, unit=1.0, random_state=0)
    pe = PrivateEmbedding(model="fake", mechanism=mech)
    assert pe.mechanism is mech
    assert pe.get_config()["mechanism"]["class"] == "LaplaceMechanism"


def test_fresh_noise_without_key_and_identical_noise_with_key(monkeypatch):
    fresh = PrivateEmbedding(model="fake")
    a, b = fresh.embed_array(DOCS[:1]), fresh.embed_array(DOCS[:1])
    assert not np.allclose(a, b)
    keyed = PrivateEmbedding(model="fake", key="s3cret-key-0123456789")
    a, b = keyed.embed_array(DOCS), keyed.embed_array(list(reversed(DOCS)))[::-1]
    np.testing.assert_array_equal(a, b)  # same text -> same vector, independent of batch position
    assert not np.allclose(a[0], keyed.encoder.encode(DOCS[:1])[0])
    other = PrivateEmbedding(model="fake", key="other-key-0123456789")
    assert not np.allclose(other.embed_array(DOCS), a)
    monkeypatch.setenv(KEY_ENV, "s3cret-key-0123456789")
    from_env = PrivateEmbedding(model="fake")
    np.testing.assert_array_equal(from_env.embed_array(DOCS), a)
    # the key never appears in config, repr or report
    for text in (json.dumps(keyed.get_config()), repr(keyed), json.dumps(keyed.privacy_report())):
        assert "s3cret-key-0123456789" not in text
    assert keyed.get_config()["keyed"] is True
    # other eps -> other keyed noise (the mechanism config is part of the HMAC context)
    assert not np.allclose(PrivateEmbedding(model="fake", key="s3cret-key-0123456789", eps=20).embed_array(DOCS), a)


def test_keyed_noise_has_the_mechanism_distribution():
    pe = PrivateEmbedding(model="fake:128", eps=10, key="k-0123456789abcdef", store_geometry="none")  # the mechanism's own noise
    texts = [f"document number {i}" for i in range(400)]
    dist = np.linalg.norm(pe.embed_array(texts) - pe.encoder.encode(texts), axis=1)
    n, scale = 128, pe.unit / 10
    assert dist.mean() == pytest.approx(n * scale, rel=0.02)
    assert dist.std() == pytest.approx(math.sqrt(n) * scale, rel=0.2)


def test_query_policies():
    clean = PrivateEmbedding(model="fake", random_state=0)
    q = clean.encoder.encode(["cough fever"])[0]
    np.testing.assert_allclose(clean.embed_query("cough fever"), q, atol=1e-6)
    noised = PrivateEmbedding(model="fake", query="noised", query_eps=5, random_state=0)
    d = np.linalg.norm(np.asarray(noised.embed_query("cough fever")) - q)
    assert d == pytest.approx(64 * noised.unit / 5, rel=0.5)
    keyed = PrivateEmbedding(model="fake", query="keyed", key="k-0123456789abcdef")
    assert keyed.embed_query("cough fever") == keyed.embed_query("cough fever")
    assert not np.allclose(keyed.embed_query("cough fever"), q)
    with pytest.raises(InvalidParameterError, match="key"):
        PrivateEmbedding(model="fake", query="keyed")


def test_chroma_and_langchain_shapes():
    pe = PrivateEmbedding(model="fake", random_state=0)
    out = pe(DOCS)
    assert isinstance(out, list) and len(out) == 4 and out[0].shape == (64,)
    qs = pe.embed_query(input=["a query", "another"])
    assert len(qs) == 2 and qs[0].shape == (64,)
    docs = pe.embed_documents(DOCS)
    assert isinstance(docs[0], list) and isinstance(docs[0][0], float)
    assert isinstance(pe.embed_query("x"), list)


def test_async_calls_each_get_their_own_stream():
    pe = PrivateEmbedding(model="fake")

    async def run():
        return await asyncio.gather(*[pe.aembed_documents(DOCS[:1]) for _ in range(4)], pe.aembed_query("x"))

    *docs, q = asyncio.run(run())
    rows = [np.asarray(d[0]) for d in docs]
    assert all(not np.allclose(rows[0], r) for r in rows[1:])
    assert len(q) == 64


@pytest.mark.parametrize("bad, err, param", [
    ({"eps": 0}, InvalidParameterError, "eps"),
    ({"eps": float("nan")}, InvalidParameterError, "eps"),
    ({"eps": float("inf")}, InvalidParameterError, "eps"),
    ({"eps": "10"}, InvalidTypeError, "eps"),
    ({"mechanism": "lapalce"}, InvalidParameterError, "mechanism"),
    ({"mechanism": 3}, InvalidTypeError, "mechanism"),
    ({"query": "dirty"}, InvalidParameterError, "query"),
    ({"query_transform": "magic"}, InvalidParameterError, "query_transform"),
    ({"space": "manhattan"}, InvalidParameterError, "space"),
    ({"key": 123}, InvalidTypeError, "key"),
    ({"random_state": "seed"}, InvalidTypeError, "random_state"),
])
def test_bad_parameters_name_parameter_expected_received(bad, err, param):
    with pytest.raises(err) as info:
        PrivateEmbedding(model="fake", **bad)
    assert str(info.value).startswith(f"{param}: expected")


def test_bad_documents_and_nan_encoders_refused_whole_batch():
    pe = PrivateEmbedding(model="fake")
    with pytest.raises(InvalidTypeError, match=r"texts\[1\]: expected a str"):
        pe.embed_documents(["ok", 3])
    with pytest.raises(InvalidParameterError, match=r"texts\[0\]"):
        pe.embed_documents([""])
    with pytest.raises(InvalidTypeError, match="wrap a single text"):
        pe.embed_documents("just one")

    def nan_encoder(texts):
        out = np.ones((len(texts), 8))
        out[-1, 0] = np.nan
        return out

    pe_nan = PrivateEmbedding(model=lambda t: nan_encoder(t) if len(t) > 1 else np.ones((len(t), 8)))
    with pytest.raises(PrivateVectorsError, match="NaN"):
        pe_nan.embed_documents(["a", "b"])


def test_config_round_trip_and_drift_detection():
    pe = PrivateEmbedding(model="fake", eps=12, mechanism="purkayastha", query_transform="none")
    cfg = pe.get_config()
    json.dumps(cfg)
    rebuilt = PrivateEmbedding.build_from_config(cfg)
    assert rebuilt.get_config() == {**cfg, "seeded": False}
    assert rebuilt == pe
    pe.validate_config_update(cfg, rebuilt.get_config())
    for change in ({"eps": 13}, {"mechanism": "laplace"}, {"model": "fake:32"}):
        other = PrivateEmbedding(**{"model": "fake", "eps": 12, "mechanism": "purkayastha", **change})
        with pytest.raises(ConfigMismatchError):
            check_config_compatible(cfg, other.get_config())
    # a query-policy change does not touch stored vectors: allowed
    check_config_compatible(cfg, PrivateEmbedding(model="fake", eps=12, mechanism="purkayastha",
                                                  query="noised").get_config())


def test_concept_in_config_and_drift():
    pe = PrivateEmbedding(model="fake", concept=StubConcept(seed=0))
    other = PrivateEmbedding(model="fake", concept=StubConcept(seed=1))
    with pytest.raises(ConfigMismatchError, match="concept"):
        check_config_compatible(pe.get_config(), other.get_config())


def test_privacy_report_contents():
    pe = PrivateEmbedding(model="fake", concept=StubConcept(), eps=10)
    rep = pe.privacy_report(DOCS)
    json.dumps(rep)
    assert rep["mechanism"] == "mahalanobis" and rep["epsilon"] == 10
    assert rep["metric"] == "mahalanobis" and rep["unit"] == pytest.approx(1 / 8)
    assert rep["expected_noise_norm"] > 0 and rep["typical_inter_document_distance"] > 0
    assert rep["indistinguishability_radius"] == pytest.approx(1 / 80)
    assert "subspace of rank 8" in rep["directions"]["shape"]
    assert rep["query_transform"]["query_transform"] == "wiener"
    assert "post-processing" in rep["query_transform"]["note"]
    assert rep["randomness"].startswith("secure") and "re-ingesting" in rep["warning"]
    assert len(rep["noisiest_dimensions"]) == 5


def test_encoder_instance_accepted():
    pe = PrivateEmbedding(model=FakeEncoder(dim=16))
    assert pe.embed_array(DOCS).shape == (4, 16)
