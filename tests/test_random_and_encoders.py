from __future__ import annotations

import threading

import numpy as np
import pytest
from scipy import stats

from private_vectors.encoders import (
    CallableEncoder,
    FakeEncoder,
    fingerprint,
    fingerprints_match,
    load_encoder,
)
from private_vectors.errors import InvalidParameterError, InvalidTypeError
from private_vectors.mechanisms import LaplaceMechanism
from private_vectors.random import KeyedStream, keyed_stream, resolve_random_state


def test_keyed_stream_deterministic_and_key_dependent():
    a = keyed_stream(b"k1", b"ctx", b"text").standard_normal(100)
    b = keyed_stream(b"k1", b"ctx", b"text").standard_normal(100)
    c = keyed_stream(b"k2", b"ctx", b"text").standard_normal(100)
    d = keyed_stream(b"k1", b"ctxt", b"ext").standard_normal(100)  # length-prefixed parts
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c) and not np.array_equal(a, d)
    assert "k1" not in repr(keyed_stream(b"k1", b"x"))


def test_keyed_stream_distributions():
    s = KeyedStream(b"\x01" * 32)
    assert stats.kstest(s.random(20000), "uniform").pvalue > 1e-3
    assert stats.kstest(s.standard_normal(20001), "norm").pvalue > 1e-3
    g = s.gamma(16, 0.5, 5000)
    assert stats.kstest(g, stats.gamma(a=16, scale=0.5).cdf).pvalue > 1e-3


def test_mechanism_accepts_keyed_rng():
    mech = LaplaceMechanism(epsilon=3.0)
    X = np.ones((2, 8))
    out1 = mech.perturb(X, rng=keyed_stream(b"key", b"t"))
    out2 = mech.perturb(X, rng=keyed_stream(b"key", b"t"))
    assert np.array_equal(out1, out2)


def test_random_state_validation_and_thread_safety():
    with pytest.raises(InvalidTypeError, match="random_state"):
        resolve_random_state("seed")
    with pytest.raises(InvalidTypeError, match="random_state"):
        resolve_random_state(-1)
    mech = LaplaceMechanism(epsilon=1.0, random_state=0)
    results: list[np.ndarray] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(50):
            out = mech.perturb(np.zeros((4, 16)))
            with lock:
                results.append(out)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stacked = np.concatenate(results)
    assert np.all(np.isfinite(stacked))
    # no two draws collide (a shared, corrupted state would repeat values)
    assert len(np.unique(stacked[:, 0])) == len(stacked)


def test_fake_encoder_is_deterministic_and_lexical():
    enc = FakeEncoder(dim=32)
    a = enc.encode(["alice lives in paris", "alice lives in paris", "bob likes rome"])
    assert a.shape == (3, 32) and a.dtype == np.float32
    assert np.array_equal(a[0], a[1])
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
    b = enc.encode(["alice lives in rome"])
    assert float(a[0] @ b[0]) > float(a[2] @ b[0]) - 1.0  # shares three words with doc 0
    assert float(a[0] @ b[0]) > 0.5
    with pytest.raises(InvalidTypeError):
        enc.encode("a lone string")
    with pytest.raises(InvalidParameterError):
        enc.encode(["ok", "  "])


def test_callable_encoder_and_fingerprints():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((256, 16))

    def fn(texts):
        return np.stack([W[[ord(c) % 256 for c in t]].sum(axis=0) for t in texts])

    enc = CallableEncoder(fn, model_id="toy")
    assert enc.dim == 16
    out = enc.encode(["abc", "xyz"])
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    f1, f2 = fingerprint(enc), fingerprint(FakeEncoder(dim=16))
    assert fingerprints_match(f1, fingerprint(enc))[0]
    ok, why = fingerprints_match(f1, f2)
    assert not ok and "canary" in why
    ok, why = fingerprints_match(f1, fingerprint(FakeEncoder(dim=8)))
    assert not ok and "dimension" in why


def test_load_encoder_resolution():
    assert isinstance(load_encoder("fake:12"), FakeEncoder)
    assert load_encoder({"type": "fake", "dim": 12}).dim == 12
    with pytest.raises(InvalidTypeError):
        load_encoder(3.5)


def test_default_model_offline():
    enc = load_encoder(None)
    assert enc.dim == 384 and enc.model_id == "all-MiniLM-L6-v2"
    out = enc.encode(["A sentence about cats.", "A sentence about dogs.", "Stock markets fell."])
    assert out.shape == (3, 384) and out.dtype == np.float32
    assert float(out[0] @ out[1]) > float(out[0] @ out[2])
    assert load_encoder("all-MiniLM-L6-v2") is enc  # loaded once per process


def test_missing_model_is_a_clear_error():
    from private_vectors.errors import ModelNotAvailableError

    with pytest.raises(ModelNotAvailableError, match="never downloads"):
        load_encoder("no-such-org/no-such-model-xyz")
