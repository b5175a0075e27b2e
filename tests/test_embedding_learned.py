"""PrivateEmbedding with a learned encoder folder (CAPE): dimension change, query path, config."""

from __future__ import annotations

import numpy as np
import pytest

from private_vectors import PrivateEmbedding, encoders, mechanisms
from private_vectors.embedding import KEY_ENV


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.fixture(scope="module")
def cape_folder(tmp_path_factory):
    enc = encoders.FakeEncoder(dim=64)
    texts = [f"{w} sentence number {i}" for i in range(40) for w in ("alpha", "beta")]
    X = enc.encode(texts)
    y = [i % 2 for i in range(len(texts))]
    z = [(i // 2) % 2 for i in range(len(texts))]
    cape = mechanisms.CapeEncoder(epsilon=10, out_dim=16, hidden_dim=16, epochs=1, random_state=0)
    cape.fit(X, y, z)
    return cape.save(tmp_path_factory.mktemp("cape") / "artefact")


def test_cape_folder_changes_dimension_and_queries_use_transform_query(cape_folder):
    pe = PrivateEmbedding(model="fake", mechanism=cape_folder)
    assert pe.out_dim == 16
    docs = pe.embed_array(["alpha sentence", "beta sentence"])
    assert docs.shape == (2, 16)
    q = np.asarray(pe.embed_query("alpha sentence"))
    expected = pe.mechanism.transform_query(pe.encoder.encode(["alpha sentence"]))[0]
    np.testing.assert_allclose(q, expected, atol=1e-5)  # no own noise, identity query transform
    cfg = pe.get_config()
    assert cfg["mechanism"]["type"] == "learned" and cfg["out_dim"] == 16 and cfg["eps"] == 10
    rebuilt = PrivateEmbedding.build_from_config(cfg)
    assert rebuilt == pe and rebuilt.out_dim == 16


def test_explicit_eps_overrides_cape_epsilon(cape_folder):
    pe = PrivateEmbedding(model="fake", mechanism=cape_folder, eps=2)
    assert pe.mechanism.epsilon == 2 and pe.eps == 2
    noised = PrivateEmbedding(model="fake", mechanism=cape_folder, query="noised", query_eps=5)
    assert np.asarray(noised.embed_query("alpha")).shape == (16,)
