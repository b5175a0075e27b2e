"""Issue 16, point 6: every edge gets a clear error naming the parameter (or documented behaviour)."""

from __future__ import annotations

import numpy as np
import pytest

from private_vectors._validation import check_texts
from private_vectors.encoders import FakeEncoder
from private_vectors.encoders.base import fingerprint
from private_vectors.encoders.function import CallableEncoder
from private_vectors.errors import InvalidParameterError, InvalidTypeError
from private_vectors.mechanisms import GaussianMechanism, LaplaceMechanism, PurkayasthaMechanism

X = np.ones((2, 8)) / np.sqrt(8)


@pytest.mark.parametrize("mech", [
    LaplaceMechanism(epsilon=1e-300),
    # classic calibration: sigma ~ 1/epsilon overflows (the analytic one stays finite as
    # epsilon -> 0, at Delta / (delta * sqrt(2 pi)); see test_integrity.py)
    GaussianMechanism(epsilon=1e-300, delta=1e-5, calibration="classic"),
    PurkayasthaMechanism(epsilon=1e300),
], ids=["laplace-tiny", "gaussian-tiny", "purkayastha-huge"])
def test_unrepresentable_noise_names_epsilon(mech):
    # main: Laplace/Gaussian returned inf, Purkayastha raised a bare OverflowError
    with pytest.raises(InvalidParameterError, match="epsilon"):
        mech.perturb(X)


def test_gaussian_sigma_overflow_names_sigma():
    with pytest.raises(InvalidParameterError, match="sigma"):
        GaussianMechanism(sigma=1e300).perturb(X * 1e30)


def test_bogus_rng_names_rng():
    # main: AttributeError: 'str' object has no attribute 'gamma'
    with pytest.raises(InvalidTypeError, match="rng"):
        LaplaceMechanism(epsilon=1.0).perturb(X, rng="bogus")


@pytest.mark.parametrize("batch", [{"a": "first text"}, {"a text"}], ids=["dict", "set"])
def test_mapping_or_set_batch_refused(batch):
    # main: a dict was accepted (its keys embedded)
    with pytest.raises(InvalidTypeError, match="texts"):
        check_texts(batch)


@pytest.mark.parametrize("text", ["\u200b", "\u200b\u200c\u200d", " \ufeff\u2060 "])
def test_zero_width_only_text_refused(text):
    with pytest.raises(InvalidParameterError, match=r"texts\[1\]"):
        check_texts(["fine", text])


def test_lone_surrogate_refused_clearly():
    # main: an unclear TypeError/UnicodeEncodeError deep in the tokenizer or the keyed path
    with pytest.raises(InvalidParameterError, match=r"texts\[0\].*UTF-8") as info:
        check_texts(["bad \ud800 text"])
    assert info.value.__context__ is None


def test_visible_unicode_text_accepted():
    assert check_texts(["héllo wörld", "日本語", "a\u200bb"]) == ["héllo wörld", "日本語", "a\u200bb"]


def test_all_zero_vectors_from_callable_encoder_refused():
    enc = CallableEncoder(lambda texts: np.zeros((len(texts), 4)), dim=4)
    with pytest.raises(InvalidParameterError, match=r"fn\(texts\).*non-zero"):
        enc.encode(["a", "b"])


def test_fitted_concept_save_is_atomic(tmp_path, monkeypatch):
    from private_vectors.fitted import artefact
    from private_vectors.fitted.artefact import FittedConcept

    fp = fingerprint(FakeEncoder(dim=8))
    basis = np.linalg.qr(np.random.default_rng(0).standard_normal((8, 2)))[0]
    old = FittedConcept(name="c", estimator="subspace", fingerprint=fp, basis=basis, share=0.9)
    folder = old.save(tmp_path / "c")
    new = FittedConcept(name="c", estimator="subspace", fingerprint=fp, basis=basis[:, ::-1].copy(), share=0.5)

    def fail(*args, **kwargs):
        raise OSError("disk full")

    # a failure after the weights were written: main left new weights next to the old config
    monkeypatch.setattr(artefact.json, "dumps", fail)
    with pytest.raises(OSError):
        new.save(folder)
    monkeypatch.undo()
    back = FittedConcept.load(folder)
    assert back.share == pytest.approx(0.9) and np.allclose(back.basis, basis, atol=1e-6)
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]

    # a crash between the two moves: load completes the save
    new.save(tmp_path / "staging")
    (tmp_path / "staging" / "config.json").rename(folder / "config.json.tmp")
    (tmp_path / "staging" / "model.safetensors").replace(folder / "model.safetensors")
    assert FittedConcept.load(folder).share == pytest.approx(0.5)
