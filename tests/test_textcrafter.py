"""TextCrafter: exact radius, orthogonality to v, PII classifier, REINFORCE training, artefacts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from private_vectors.encoders import FakeEncoder
from private_vectors.errors import (
    ArtefactError,
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
)
from private_vectors.mechanisms import Mechanism, TextCrafter, load_learned
from private_vectors.mechanisms.learned import NotFittedError
from private_vectors.mechanisms.pii_classifier import PIIClassifier, kmeans, relabel_pii
from private_vectors.random import keyed_stream
from private_vectors.text.light import LightDetector

N = 48
TOL = 1e-5


def _toy(m: int = 320, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors; the PII label shifts them along coordinate 0."""
    rng = np.random.default_rng(seed)
    y = (rng.random(m) < 0.5).astype(int)
    X = rng.standard_normal((m, N))
    X[:, 0] += 3.0 * y
    return X / np.linalg.norm(X, axis=1, keepdims=True), y


@pytest.fixture(scope="module")
def toy() -> tuple[np.ndarray, np.ndarray]:
    return _toy()


def _make(epochs: int) -> TextCrafter:
    return TextCrafter(radius=0.4, epochs=epochs, batch_size=64, lr=3e-3, token_dim=16, d_model=32,
                       ffn_dim=64, n_clusters=4, random_state=0)


@pytest.fixture(scope="module")
def trained(toy) -> TextCrafter:
    X, y = toy
    return _make(8).fit(X, y)


@pytest.fixture(scope="module")
def untrained(toy) -> TextCrafter:
    X, y = toy
    return _make(0).fit(X, y)


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(42)
    X = rng.standard_normal((200, N))
    X[:100] /= np.linalg.norm(X[:100], axis=1, keepdims=True)  # unit rows and raw rows
    X[150:] *= 25.0  # large norms too
    return X


@pytest.mark.parametrize("radius", [1e-3, 0.4, 3.0])
def test_exact_radius_and_orthogonality_for_every_input(trained: TextCrafter, radius: float) -> None:
    model = trained if radius == 0.4 else trained.with_radius(radius)
    X = _inputs()
    for rng in (None, np.random.default_rng(1), keyed_stream(b"s" * 32, b"ctx")):
        out = np.asarray(model.perturb(X, rng=rng), dtype=np.float64)
        step = out - X
        v = model.directions(X)
        np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-12)
        assert np.max(np.abs(np.linalg.norm(step, axis=1) - radius)) <= TOL * max(1.0, np.abs(X).max())
        assert np.max(np.abs(np.sum(step * v, axis=1))) <= TOL * max(1.0, np.abs(X).max())


def test_untrained_policy_is_orthogonal_to_the_input_itself(untrained: TextCrafter) -> None:
    X = _inputs()[:100]
    step = np.asarray(untrained.perturb(X), dtype=np.float64) - X
    assert np.max(np.abs(np.sum(step * X, axis=1))) <= TOL  # v starts at f0/|f0|
    np.testing.assert_allclose(untrained.directions(X), X / np.linalg.norm(X, axis=1, keepdims=True), atol=1e-6)


def test_is_a_mechanism_and_noise_is_random(trained: TextCrafter, toy) -> None:
    X, _ = toy
    assert isinstance(trained, Mechanism) and trained.name == "textcrafter"
    assert trained.output_dim(N) == N
    a, b = trained.perturb(X[:5]), trained.perturb(X[:5])
    assert a.shape == (5, N) and a.dtype == np.float32 and not np.allclose(a, b)
    assert trained.perturb(X[0]).shape == (N,)
    np.testing.assert_array_equal(trained.transform_query(X[:3]), X[:3].astype(np.float32))  # queries untouched
    k1 = trained.perturb(X[:4], rng=keyed_stream(b"k" * 32, b"doc"))
    k2 = trained.perturb(X[:4], rng=keyed_stream(b"k" * 32, b"doc"))
    np.testing.assert_array_equal(k1, k2)


def test_reinforce_lowers_the_pii_probability(trained: TextCrafter, untrained: TextCrafter, toy) -> None:
    X, y = toy
    pii = X[y == 1]
    before = untrained.mean_reward(pii, rng=np.random.default_rng(3))
    after = trained.mean_reward(pii, rng=np.random.default_rng(3))
    assert before["p_pii_clean"] == pytest.approx(after["p_pii_clean"])  # same p_Φ (same seed)
    assert after["p_pii_perturbed"] <= before["p_pii_perturbed"] - 0.1
    assert trained.history_[-1]["reward"] > trained.history_[0]["reward"]


def test_pii_classifier_and_relabelling() -> None:
    X, y = _toy(400, seed=5)
    clf = PIIClassifier().fit(X[:300], y[:300], random_state=0)
    assert clf.score(X[300:], y[300:]) >= 0.9
    p = clf.predict_proba(X[300:])
    assert p.shape == (100,) and np.all((p > 0) & (p < 1))
    with pytest.raises(NotFittedError):
        PIIClassifier().predict_proba(X)
    texts = ["Email me at ann@example.org", "The weather is fine.", "Call 555-123-4567 now", "Cats sleep a lot."]
    fixed, flipped = relabel_pii(texts, [0, 0, 0, 1], LightDetector())
    assert fixed.tolist() == [1, 0, 1, 1] and flipped == 2


def test_kmeans_recovers_separated_clusters() -> None:
    rng = np.random.default_rng(0)
    centres = np.array([[5.0, 0], [-5.0, 0], [0, 5.0]])
    X = np.concatenate([c + 0.1 * rng.standard_normal((30, 2)) for c in centres])
    C, assign = kmeans(X, 3, np.random.default_rng(1))
    assert len(set(assign[:30])) == len(set(assign[30:60])) == len(set(assign[60:])) == 1
    assert len(set(assign)) == 3
    assert np.min(np.linalg.norm(C[:, None] - centres[None], axis=2), axis=0).max() < 0.2


def test_save_load_roundtrip(trained: TextCrafter, toy, tmp_path) -> None:
    X, _ = toy
    enc = FakeEncoder(dim=N)
    trained._record_encoder(enc)
    folder = trained.save(tmp_path / "tc")
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["type"] == "textcrafter" and cfg["params"]["radius"] == 0.4 and "encoder_fingerprint" in cfg
    again = load_learned(folder)
    assert isinstance(again, TextCrafter)
    np.testing.assert_array_equal(again.perturb(X[:6], rng=np.random.default_rng(2)),
                                  trained.perturb(X[:6], rng=np.random.default_rng(2)))
    np.testing.assert_allclose(again.pii_classifier_.predict_proba(X[:6]), trained.pii_classifier_.predict_proba(X[:6]))
    again.check_encoder(enc)
    with pytest.raises(ConfigMismatchError):
        again.check_encoder(FakeEncoder(dim=N + 1))
    wider = TextCrafter.load(folder, radius=2.0)
    step = np.asarray(wider.perturb(X[:6]), dtype=np.float64) - X[:6]
    np.testing.assert_allclose(np.linalg.norm(step, axis=1), 2.0, atol=TOL)
    with pytest.raises(InvalidTypeError):
        TextCrafter.load(folder, d_model=8)
    (folder / "config.json").write_text("{not json")
    with pytest.raises(ArtefactError):
        load_learned(folder)


def test_parameter_and_input_errors(trained: TextCrafter, toy) -> None:
    X, _ = toy
    for bad in (0, -0.1, float("nan")):
        with pytest.raises(InvalidParameterError):
            TextCrafter(radius=bad)
    with pytest.raises(InvalidParameterError):
        TextCrafter(d_model=30, n_heads=4)
    with pytest.raises(InvalidParameterError):
        TextCrafter(ema_decay=1.0)
    with pytest.raises(NotFittedError):
        TextCrafter().perturb(X[:2])
    with pytest.raises(InvalidParameterError):
        trained.perturb(np.ones((2, N + 3)))
    with pytest.raises(InvalidParameterError):
        TextCrafter(epochs=0).fit(X, np.full(len(X), 2))
    with pytest.raises(InvalidParameterError):
        TextCrafter(epochs=0).fit(X, np.zeros(len(X)))


def test_radius_unit_and_describe(trained: TextCrafter) -> None:
    assert TextCrafter.radius_from_eps(10, 384) == pytest.approx(10 / math.sqrt(384))
    info = trained.describe()
    json.dumps(info)
    assert info["radius"] == 0.4 and info["expected_noise_norm"] == 0.4
    assert info["epsilon"] == pytest.approx(0.4 * math.sqrt(N))


def test_packaged_artefact_for_the_default_model() -> None:
    model = load_learned("textcrafter")
    assert isinstance(model, TextCrafter) and model.n_features_in_ == 384
    X = np.random.default_rng(0).standard_normal((50, 384))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    step = np.asarray(model.perturb(X), dtype=np.float64) - X
    v = model.directions(X)
    np.testing.assert_allclose(np.linalg.norm(step, axis=1), model.radius, atol=TOL)
    assert np.max(np.abs(np.sum(step * v, axis=1))) <= TOL
    with pytest.raises(ConfigMismatchError):
        model.check_encoder(FakeEncoder(dim=384))


def test_seeded_training_is_reproducible_and_leaves_global_rng_alone(toy) -> None:
    import torch

    X, y = toy
    torch.manual_seed(5)
    expected_next = torch.rand(1)
    torch.manual_seed(5)
    a = _make(1).fit(X, y)
    assert torch.equal(torch.rand(1), expected_next)
    b = _make(1).fit(X, y)
    for key in ("mu", "sigma", "v"):
        np.testing.assert_array_equal(a.policy(X[:4])[key], b.policy(X[:4])[key])
