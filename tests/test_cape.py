"""CAPE: projection + L1 normalisation + fresh Laplace(2/ε) noise; adversarial training; artefacts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from private_vectors.encoders import FakeEncoder
from private_vectors.errors import (
    ArtefactError,
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
    PrivateVectorsError,
)
from private_vectors.mechanisms import CapeEncoder, Mechanism, load_learned
from private_vectors.mechanisms.cape import SENSITIVITY, laplace_noise
from private_vectors.mechanisms.learned import NotFittedError, packaged_artefact
from private_vectors.random import keyed_stream


def _toy(m: int = 400, n: int = 24, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """y (3 classes) lives in coordinates 0–2, z (2 classes) in coordinate 3, independently."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, m)
    z = rng.integers(0, 2, m)
    X = 0.3 * rng.standard_normal((m, n))
    X[np.arange(m), y] += 2.0
    X[:, 3] += np.where(z == 1, 2.0, -2.0)
    return X / np.linalg.norm(X, axis=1, keepdims=True), y, z


@pytest.fixture(scope="module")
def toy() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _toy()


@pytest.fixture(scope="module")
def fitted(toy) -> CapeEncoder:
    X, y, z = toy
    return CapeEncoder(epsilon=4.0, out_dim=16, hidden_dim=32, epochs=5, random_state=0).fit(X, y, z)


def test_is_a_mechanism_with_learned_state(fitted: CapeEncoder, toy) -> None:
    X, _, _ = toy
    assert isinstance(fitted, Mechanism) and fitted.name == "cape"
    assert fitted.n_features_in_ == X.shape[1] and fitted.output_dim(X.shape[1]) == 16
    assert fitted.classes_y_ == [0, 1, 2] and fitted.classes_z_ == [0, 1]
    assert len(fitted.history_) == 5
    assert fitted.perturb(X[:7]).shape == (7, 16)
    assert fitted.perturb(X[0]).shape == (16,)


def test_query_side_is_l1_normalised_and_noise_free(fitted: CapeEncoder, toy) -> None:
    X, _, _ = toy
    q1, q2 = fitted.transform_query(X[:50]), fitted.transform_query(X[:50])
    np.testing.assert_array_equal(q1, q2)
    np.testing.assert_allclose(np.abs(q1).sum(axis=1), 1.0, atol=1e-5)
    assert q1.dtype == np.float32 and q1.shape == (50, 16)


def test_noise_is_fresh_for_every_input_and_call(fitted: CapeEncoder, toy) -> None:
    X, _, _ = toy
    same = np.repeat(X[:1], 5, axis=0)
    a, b = fitted.perturb(same), fitted.perturb(same)
    assert not np.allclose(a, b)  # a new draw per call
    assert len({row.tobytes() for row in a}) == 5  # a new draw per row, even for identical inputs


def test_noise_is_laplace_with_scale_two_over_epsilon(fitted: CapeEncoder, toy) -> None:
    X, _, _ = toy
    noise = (fitted.perturb(X, rng=np.random.default_rng(5)) - fitted.transform_query(X)).ravel().astype(np.float64)
    b = SENSITIVITY / fitted.epsilon
    assert fitted.scale == pytest.approx(b)
    assert abs(noise.mean()) < 0.03
    assert np.abs(noise).mean() == pytest.approx(b, rel=0.05)  # E|Lap(b)| = b
    # Var/(E|X|)^2 is 2 for Laplace and π/2 ≈ 1.57 for a Gaussian
    assert noise.var() / np.abs(noise).mean() ** 2 == pytest.approx(2.0, abs=0.15)


def test_keyed_noise_is_reproducible(fitted: CapeEncoder, toy) -> None:
    X, _, _ = toy
    a = fitted.perturb(X[:3], rng=keyed_stream(b"k" * 32, b"doc-1"))
    b = fitted.perturb(X[:3], rng=keyed_stream(b"k" * 32, b"doc-1"))
    c = fitted.perturb(X[:3], rng=keyed_stream(b"k" * 32, b"doc-2"))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    lap = laplace_noise(keyed_stream(b"x" * 32, b"y"), (2000, 4), 0.5)
    assert np.isfinite(lap).all() and np.abs(lap).mean() == pytest.approx(0.5, rel=0.1)


def test_torch_in_torch_out(fitted: CapeEncoder, toy) -> None:
    import torch

    X, _, _ = toy
    out = fitted.perturb(torch.as_tensor(X[:4], dtype=torch.float32))
    assert isinstance(out, torch.Tensor) and out.shape == (4, 16)


def test_adversary_is_fooled_while_the_task_survives(toy) -> None:
    """Paper eq. 3: with λ > 0 the reversed gradient defeats the adversary head; with λ = 0 it wins."""
    X, y, z = toy
    tr, te = np.arange(300), np.arange(300, 400)
    kwargs = dict(epsilon=1e4, out_dim=24, hidden_dim=32, epochs=25, lr=3e-3, random_state=1)
    plain = CapeEncoder(lambda_adv=0.0, **kwargs).fit(X[tr], y[tr], z[tr])
    adv = CapeEncoder(lambda_adv=1.0, **kwargs).fit(X[tr], y[tr], z[tr])
    rng = np.random.default_rng(0)
    adv_acc_plain = np.mean(plain.predict_private(X[te], rng=rng) == z[te])
    adv_acc = np.mean(adv.predict_private(X[te], rng=rng) == z[te])
    task_acc = np.mean(adv.predict_task(X[te], rng=rng) == y[te])
    assert adv_acc_plain >= 0.9
    assert adv_acc <= 0.7
    assert task_acc >= 0.9


def test_save_load_roundtrip(fitted: CapeEncoder, toy, tmp_path) -> None:
    X, _, _ = toy
    enc = FakeEncoder(dim=24)
    fitted._record_encoder(enc)
    folder = fitted.save(tmp_path / "cape")
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["type"] == "cape" and cfg["encoder_fingerprint"]["dim"] == 24
    assert (folder / "model.safetensors").is_file()
    again = load_learned(folder)
    assert isinstance(again, CapeEncoder) and again.get_params() == fitted.get_params()
    np.testing.assert_array_equal(again.transform_query(X[:5]), fitted.transform_query(X[:5]))
    np.testing.assert_array_equal(again.perturb(X[:5], rng=np.random.default_rng(9)),
                                  fitted.perturb(X[:5], rng=np.random.default_rng(9)))
    again.check_encoder(enc)
    with pytest.raises(ConfigMismatchError):
        again.check_encoder(FakeEncoder(dim=32))
    louder = CapeEncoder.load(folder, epsilon=1.0)
    assert louder.epsilon == 1.0 and louder.scale == 2.0
    assert fitted.with_epsilon(2.0).scale == 1.0
    with pytest.raises(InvalidTypeError):
        CapeEncoder.load(folder, out_dim=3)


def test_artefact_errors(fitted: CapeEncoder, tmp_path) -> None:
    with pytest.raises(ArtefactError):
        load_learned(tmp_path / "nothing")
    folder = fitted.save(tmp_path / "a")
    (folder / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ArtefactError):
        load_learned(folder)
    folder = fitted.save(tmp_path / "b")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["type"] = "alien"
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ArtefactError):
        load_learned(folder)
    cfg["type"] = "textcrafter"
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ArtefactError):
        CapeEncoder.load(folder)  # right file format, wrong class
    folder = fitted.save(tmp_path / "c")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["params"]["out_dim"] = 99  # weights no longer fit
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ArtefactError):
        load_learned(folder)


def test_parameter_and_input_errors(fitted: CapeEncoder, toy) -> None:
    X, y, z = toy
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InvalidParameterError):
            CapeEncoder(epsilon=bad)
    with pytest.raises(InvalidTypeError):
        CapeEncoder(epsilon="10")
    with pytest.raises(InvalidParameterError):
        CapeEncoder(lambda_adv=-1)
    with pytest.raises(NotFittedError) as info:
        CapeEncoder().perturb(X[:2])
    assert isinstance(info.value, PrivateVectorsError)
    with pytest.raises(InvalidParameterError):
        fitted.perturb(np.ones((2, 5)))
    with pytest.raises(InvalidParameterError):
        CapeEncoder(epochs=1).fit(X, y[:-1], z)
    with pytest.raises(InvalidParameterError):
        CapeEncoder(epochs=1).fit(X, np.zeros(len(X)), z)


def test_describe_is_json_safe(fitted: CapeEncoder) -> None:
    info = fitted.describe()
    json.dumps(info)
    assert info["name"] == "cape" and info["laplace_scale"] == pytest.approx(0.5)
    assert info["output_dim"] == 16 and info["seeded"] is True


def test_packaged_artefact_for_the_default_model() -> None:
    model = load_learned("cape")
    assert isinstance(model, CapeEncoder)
    assert model.n_features_in_ == 384
    assert packaged_artefact("cape").name == "cape"
    X = np.random.default_rng(0).standard_normal((20, 384))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    q = model.transform_query(X)
    np.testing.assert_allclose(np.abs(q).sum(axis=1), 1.0, atol=1e-5)
    assert model.perturb(X).shape == (20, model.out_dim)
    assert model.encoder_fingerprint_ is not None and model.encoder_fingerprint_["dim"] == 384
    with pytest.raises(ConfigMismatchError):
        model.check_encoder(FakeEncoder(dim=384))  # same size, another encoder


def test_learned_helpers_adam_threads_and_dispatch(tmp_path) -> None:
    import torch

    from private_vectors.mechanisms.learned import Adam, clip_grad_norm, small_model_threads

    target = torch.tensor([3.0, -2.0, 0.5])
    w = torch.zeros(3, requires_grad=True)
    opt = Adam([w], lr=0.1)
    for _ in range(300):
        opt.zero_grad()
        ((w - target) ** 2).sum().backward()
        opt.step()
    torch.testing.assert_close(w.detach(), target, atol=1e-2, rtol=0)
    w.grad = torch.full((3,), 10.0)
    assert clip_grad_norm([w], 1.0) == pytest.approx(10 * np.sqrt(3), rel=1e-5)
    assert float(w.grad.norm()) == pytest.approx(1.0, rel=1e-5)
    before = torch.get_num_threads()
    with small_model_threads():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ArtefactError):
        load_learned("no-such-artefact-folder")
    with pytest.raises(InvalidTypeError):
        load_learned(42)  # type: ignore[arg-type]


@pytest.mark.slow
def test_packaged_artefacts_match_the_default_encoder() -> None:
    from private_vectors.encoders import load_encoder

    enc = load_encoder(None)
    for kind in ("cape", "textcrafter"):
        model = load_learned(kind)
        model.check_encoder(enc)  # canary embeddings agree
        X = enc.encode(["Maria Lopez lives at 42 Elm Street.", "The weather is nice today."])
        assert model.perturb(X).shape[0] == 2


def test_seeded_training_is_reproducible_and_leaves_global_rng_alone(toy) -> None:
    import torch

    X, y, z = toy
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    a = CapeEncoder(epsilon=4.0, out_dim=8, hidden_dim=16, epochs=2, random_state=7).fit(X, y, z)
    assert torch.equal(torch.rand(1), expected_next)  # training draws from its own generator
    b = CapeEncoder(epsilon=4.0, out_dim=8, hidden_dim=16, epochs=2, random_state=7).fit(X, y, z)
    c = CapeEncoder(epsilon=4.0, out_dim=8, hidden_dim=16, epochs=2, random_state=8).fit(X, y, z)
    np.testing.assert_array_equal(a.transform_query(X[:5]), b.transform_query(X[:5]))
    assert not np.allclose(a.transform_query(X[:5]), c.transform_query(X[:5]))
