"""Attribute concepts: erasure methods, AttributeConcept artefacts, PrivateEmbedding's erasure stage."""

from __future__ import annotations

import json

import numpy as np
import pytest

from private_vectors.config import DRIFT_FIELDS, check_config_compatible
from private_vectors.encoders import FakeEncoder
from private_vectors.errors import (
    ArtefactError,
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
)
from private_vectors.fitted import DEFAULT_METHOD, AttributeConcept, fit_attribute, load_attribute
from private_vectors.fitted.erasure import (
    AdversarialErasure,
    ClusterLeaceErasure,
    LeaceErasure,
    make_erasure,
)


def _probe_accuracy(X_train, z_train, X_test, z_test, kind="logistic"):
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier

    clf = LogisticRegression(max_iter=2000) if kind == "logistic" else KNeighborsClassifier(n_neighbors=15)
    return clf.fit(X_train, z_train).score(X_test, z_test)


def _planted_linear(m=600, n=24, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 2, m)
    direction = rng.standard_normal(n)
    X = rng.standard_normal((m, n)) + 3.0 * np.outer(z - 0.5, direction / np.linalg.norm(direction))
    return X, z


def _planted_piecewise(m=1200, n=12, seed=0):
    """Four regions; inside each the attribute shifts along a region-specific direction that cancels globally."""
    rng = np.random.default_rng(seed)
    centres = 8.0 * np.eye(n)[:4]
    dirs = np.stack([np.eye(n)[5], -np.eye(n)[5], np.eye(n)[6], -np.eye(n)[6]])
    region = rng.integers(0, 4, m)
    z = rng.integers(0, 2, m)
    X = centres[region] + 0.5 * rng.standard_normal((m, n)) + 1.5 * (z - 0.5)[:, None] * dirs[region]
    return X, z


def test_leace_drives_a_linear_probe_to_chance_on_planted_data():
    X, z = _planted_linear()
    fit, test = slice(0, 400), slice(400, None)
    assert _probe_accuracy(X[fit], z[fit], X[test], z[test]) > 0.8
    er = LeaceErasure().fit(X[fit], z[fit])
    E = er.transform(X)
    assert er.rank_ == 1
    assert _probe_accuracy(E[fit], z[fit], E[test], z[test]) < 0.62
    # LEACE's guarantee on the fitting data: equal class means
    diff = E[fit][z[fit] == 1].mean(0) - E[fit][z[fit] == 0].mean(0)
    assert np.linalg.norm(diff) < 1e-5


def test_cluster_leace_removes_piecewise_information_that_leace_leaves():
    X, z = _planted_piecewise()
    fit, tr, te = slice(0, 600), slice(600, 900), slice(900, None)
    lea = LeaceErasure().fit(X[fit], z[fit]).transform(X)
    clu = ClusterLeaceErasure(n_clusters=4, n_iter=1).fit(X[fit], z[fit]).transform(X)
    assert _probe_accuracy(lea[tr], z[tr], lea[te], z[te], "knn") > 0.8
    assert _probe_accuracy(clu[tr], z[tr], clu[te], z[te], "knn") < 0.65


def test_adversarial_erasure_is_an_orthogonal_projection_that_lowers_the_probe():
    X, z = _planted_linear(m=400)
    er = AdversarialErasure(rank=2, epochs=15).fit(X[:300], z[:300])
    assert len(er.steps_) == 2  # LEACE, then the learned projection
    left, right, _ = er.steps_[1]
    np.testing.assert_allclose(right, left.T, atol=1e-6)
    np.testing.assert_allclose(left.T @ left, np.eye(2), atol=1e-5)
    E = er.transform(X)
    assert _probe_accuracy(E[:200], z[:200], E[300:], z[300:]) < 0.65


def test_erasure_bad_input():
    with pytest.raises(InvalidParameterError, match="method"):
        make_erasure("kernel-magic")
    with pytest.raises(InvalidParameterError, match="z"):
        LeaceErasure().fit(np.zeros((10, 4)), [0] * 10)  # one class
    with pytest.raises(InvalidParameterError, match="z"):
        LeaceErasure().fit(np.zeros((10, 4)), [0, 1])  # wrong length
    with pytest.raises(InvalidParameterError, match="n_clusters"):
        ClusterLeaceErasure(n_clusters=0)
    with pytest.raises(InvalidParameterError, match="eraser"):
        LeaceErasure().transform(np.zeros(4))
    er = LeaceErasure().fit(*_planted_linear(m=50, n=6))
    with pytest.raises(InvalidParameterError, match="dimension 6"):
        er.transform(np.zeros(5))


# -- AttributeConcept from texts (FakeEncoder, planted attribute) --------------------------------
SYMPTOMS = ["cough", "fever", "rash", "nausea", "fatigue", "headache", "dizziness", "chills", "pain", "itching"]


def _planted_texts(m=240, seed=0):
    """Texts whose words imply the attribute without naming it (flag words 'alpha'/'beta')."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(m):
        z = "A" if rng.random() < 0.5 else "B"
        words = list(rng.choice(SYMPTOMS, 3, replace=False))
        marker = "alpha" if (z == "A") == (rng.random() < 0.9) else "beta"
        texts.append(f"case {i} reports {' '.join(words)} {marker} history")
        labels.append(z)
    return texts, labels


@pytest.fixture(scope="module")
def fake_encoder():
    return FakeEncoder(dim=48)


@pytest.fixture(scope="module")
def planted_concept(fake_encoder):
    texts, labels = _planted_texts()
    return fit_attribute(texts, labels, encoder=fake_encoder, name="planted", attribute="group")


def test_fit_attribute_records_held_out_attackers(planted_concept):
    ev = planted_concept.evaluation_
    assert planted_concept.classes_ == ["A", "B"]
    assert ev["logistic"]["before"] > 0.8
    assert ev["logistic"]["after"] <= ev["majority"] + 0.12
    assert ev["n_fit"] + ev["n_held_out"] == 240
    assert planted_concept.rank_ >= 1


def test_save_load_round_trip_and_integrity(planted_concept, fake_encoder, tmp_path):
    folder = planted_concept.save(tmp_path / "planted")
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["attribute"] == "group" and cfg["method"] == DEFAULT_METHOD == "cluster-leace" and cfg["classes"] == ["A", "B"]
    assert cfg["fingerprint"]["model_id"] == fake_encoder.model_id and "logistic" in cfg["evaluation"]
    again = load_attribute(folder, fake_encoder)
    X = fake_encoder.encode(["case 1 reports cough alpha history", "fever"])
    np.testing.assert_allclose(again.erase(X), planted_concept.erase(X), atol=1e-6)
    assert again.content_sha256() == planted_concept.content_sha256()
    planted_concept.save(folder)  # overwrite in place works (atomic replace)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    with pytest.raises(ConfigMismatchError):
        load_attribute(folder, FakeEncoder(dim=32))
    raw = bytearray((folder / "model.safetensors").read_bytes())
    raw[-3] ^= 0xFF
    (folder / "model.safetensors").write_bytes(bytes(raw))
    with pytest.raises(ArtefactError, match="SHA-256"):
        AttributeConcept.load(folder)
    (folder / "config.json").unlink()
    with pytest.raises(ArtefactError, match="missing"):
        AttributeConcept.load(folder)


def test_fit_attribute_bad_input(fake_encoder):
    texts, labels = _planted_texts(m=40)
    with pytest.raises(InvalidTypeError, match="texts"):
        fit_attribute("one text", ["A"], encoder=fake_encoder)
    with pytest.raises(InvalidParameterError, match="labels"):
        fit_attribute(texts, labels[:-1], encoder=fake_encoder)
    with pytest.raises(InvalidParameterError, match="labels"):
        fit_attribute(texts, ["A"] * 40, encoder=fake_encoder)
    with pytest.raises(InvalidParameterError, match="method"):
        fit_attribute(texts, labels, encoder=fake_encoder, method="magic")
    with pytest.raises(InvalidParameterError, match="labels\\[3\\]"):
        fit_attribute(texts, [*labels[:3], None, *labels[4:]], encoder=fake_encoder)
    with pytest.raises(InvalidTypeError, match="concept"):
        load_attribute(3.5, fake_encoder)


# -- PrivateEmbedding(concept=<attribute>) ---------------------------------------------------------
def test_private_embedding_erases_documents_and_queries(planted_concept, fake_encoder, tmp_path):
    from private_vectors import PrivateEmbedding

    folder = planted_concept.save(tmp_path / "planted")
    ef = PrivateEmbedding(concept=str(folder), model=fake_encoder, mechanism="none", eps=10,
                          store_geometry="none")  # the erased vectors themselves, not renormalised
    docs = ["case 7 reports rash alpha history", "case 8 reports chills beta history"]
    expected = planted_concept.erase(fake_encoder.encode(docs))
    np.testing.assert_allclose(ef.embed_array(docs), expected, atol=1e-5)
    np.testing.assert_allclose(ef.embed_query_array(docs), expected, atol=1e-5)
    cfg = ef.get_config()
    assert "erasure" in DRIFT_FIELDS and cfg["erasure"]["method"] == DEFAULT_METHOD and cfg["concept"] is None
    report = ef.privacy_report()
    assert report["erasure"]["attribute"] == "group" and "logistic" in report["erasure"]["held_out_attackers"]
    assert "erasure" in report["warning"]
    rebuilt = PrivateEmbedding.build_from_config(json.loads(json.dumps(cfg)))
    np.testing.assert_allclose(rebuilt.embed_array(docs), expected, atol=1e-5)
    plain = PrivateEmbedding(model=fake_encoder, mechanism="none", eps=10).get_config()
    with pytest.raises(ConfigMismatchError, match="erasure"):
        check_config_compatible(cfg, plain)
    noisy = PrivateEmbedding(concept=planted_concept, model=fake_encoder, eps=10, random_state=0)
    assert noisy.mechanism.name == "laplace"
    out = noisy.embed_array(docs)
    assert out.shape == expected.shape and not np.allclose(out, expected)
    key = "an attribute-test key of 32 bytes"
    keyed = PrivateEmbedding(concept=planted_concept, model=fake_encoder, eps=10, key=key)
    unerased = PrivateEmbedding(model=fake_encoder, eps=10, key=key)
    assert keyed.pipeline.keyed_context() != unerased.pipeline.keyed_context()  # the erasure is part of the keyed context


def test_builtin_attribute_concepts_ship_for_the_default_model():
    from importlib import resources

    for name in ("sex", "age_band"):
        for sub in ((), ("cluster-leace",)):
            folder = resources.files("private_vectors").joinpath("data", "concepts", "all-MiniLM-L6-v2", name, *sub)
            concept = AttributeConcept.load(str(folder))
            assert concept.attribute == name and concept.fingerprint_["dim"] == 384
            assert concept.method == (sub[0] if sub else "leace")
            assert {"logistic", "mlp"} <= set(concept.evaluation_)
            assert concept.erase(np.ones(384) / np.sqrt(384)).shape == (384,)


def test_builtin_attribute_by_name(fake_encoder):
    from private_vectors import PrivateEmbedding

    with pytest.raises(InvalidParameterError, match="all-MiniLM-L6-v2"):
        load_attribute("sex", fake_encoder)  # shipped for the default model only
    ef = PrivateEmbedding(concept="sex", mechanism="none", eps=10)
    assert ef.erasure.source == "builtin" and ef.get_config()["erasure"]["type"] == "builtin"
    rebuilt = PrivateEmbedding.build_from_config(json.loads(json.dumps(ef.get_config())))
    text = ["The patient presents the symptoms of cough and fever."]
    np.testing.assert_allclose(rebuilt.embed_array(text), ef.embed_array(text), atol=1e-6)
