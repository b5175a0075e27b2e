"""Stored-vector geometry: l2, cosine and ip stores rank alike (issue 20), also in the plain
LangChain classes with their defaults (Chroma l2, langchain_community FAISS l2)."""

from __future__ import annotations

import numpy as np
import pytest

from private_vectors import PrivateEmbedding
from private_vectors.config import check_config_compatible
from private_vectors.errors import ConfigMismatchError, InvalidParameterError
from private_vectors.retrieval import geometry_documents, geometry_queries, scores, strip_geometry

TOPICS = ["cough fever patient", "revenue profit quarter", "trail snow mountain", "flight airport travel"]
DOCS = [f"{t} note {i}" for i in range(6) for t in TOPICS]
QUERIES = ["patient with a fever", "quarterly profit", "snow on the mountain trail", "airport flight delay"]


def _orders(Q, D):
    return {sp: np.argsort(-scores(Q, D, sp), axis=1, kind="stable").tolist() for sp in ("ip", "cosine", "l2")}


def test_spherical_noise_is_stored_at_unit_norm_and_ranks_alike():
    pe = PrivateEmbedding(model="fake", eps=20, random_state=0)
    assert pe.store_geometry == "normalize" and pe.space == "cosine" and pe.out_dim == pe.dim
    Z = pe.embed_array(DOCS)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, atol=1e-5)
    o = _orders(pe.embed_query_array(QUERIES), Z)
    assert o["ip"] == o["cosine"] == o["l2"]


def test_concept_noise_is_augmented_and_every_space_ranks_as_raw_ip():
    pe = PrivateEmbedding(concept="PII", noise_concept="PII", eps=10, random_state=0, mechanism="mahalanobis")
    raw = PrivateEmbedding(concept="PII", noise_concept="PII", eps=10, random_state=0, store_geometry="none",
                           mechanism="mahalanobis")
    assert pe.space == "ip" and pe.store_geometry == "augment" and pe.out_dim == pe.dim + 1
    Z, Q = pe.embed_array(DOCS), pe.embed_query_array(QUERIES)
    M = pe.get_config()["store_geometry"]["M"]
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), M, rtol=1e-5)
    assert np.all(Q[:, -1] == 0)
    o = _orders(Q, Z)
    Zraw = raw.embed_array(DOCS)  # same seed, first call: the same noise
    np.testing.assert_allclose(strip_geometry(Z, "augment"), Zraw, atol=1e-5)
    assert o["ip"] == o["cosine"] == o["l2"] == _orders(raw.embed_query_array(QUERIES), Zraw)["ip"]


def test_geometry_is_recorded_rebuilt_and_drift_checked():
    pe = PrivateEmbedding(model="fake", eps=20)
    cfg = pe.get_config()
    assert cfg["store_geometry"] == {"kind": "normalize"}
    assert PrivateEmbedding.build_from_config(cfg).store_geometry == "normalize"
    old = {k: v for k, v in cfg.items() if k != "store_geometry"}  # written before the field existed
    rebuilt = PrivateEmbedding.build_from_config(old)
    assert rebuilt.store_geometry == "none"
    with pytest.raises(ConfigMismatchError, match="store_geometry"):
        check_config_compatible(old, cfg)
    with pytest.raises(InvalidParameterError, match="store_geometry"):
        PrivateEmbedding(model="fake", store_geometry="sphere")


def test_vectors_beyond_the_bound_warn_once():
    pe = PrivateEmbedding(model="fake", eps=5, space="ip", store_geometry={"kind": "augment", "M": 0.5})
    with pytest.warns(UserWarning, match="augmentation bound"):
        Z = pe.embed_array(DOCS[:2])
    assert np.all(Z[:, -1] == 0)
    D, clipped = geometry_documents(np.ones((2, 3)), "augment", 10.0)
    assert clipped == 0 and np.allclose(np.linalg.norm(D, axis=1), 10.0)
    assert geometry_queries(np.ones((1, 3)), "augment").shape == (1, 4)


def test_privacy_report_states_geometry_and_store_space(tmp_path):
    pytest.importorskip("langchain_chroma")
    from private_vectors.langchain import Chroma

    pe = PrivateEmbedding(model="fake", eps=20)
    assert pe.privacy_report()["store_space"] is None
    Chroma(collection_name="notes", embedding_function=pe, persist_directory=str(tmp_path))
    rep = pe.privacy_report()
    assert rep["store_space"] == "cosine" and rep["store_geometry"]["kind"] == "normalize"
    assert "all rank as cosine" in rep["store_geometry"]["ranking"]


def _ids_by_rank(hits):
    return [d.metadata["i"] for d in hits]


@pytest.mark.parametrize("concept", [None, "PII"])
def test_plain_langchain_classes_rank_like_the_private_store(tmp_path, concept):
    """The front-page line with the plain classes (their default l2) ranks as the drop-in does."""
    lc = pytest.importorskip("langchain_chroma")
    faiss_mod = pytest.importorskip("langchain_community.vectorstores")
    pytest.importorskip("faiss")
    from private_vectors.langchain import Chroma

    pe = PrivateEmbedding(concept=concept, eps=10, key="test-only-key-0123456789",
                          seal=False)  # keyed: identical vectors per text; unsealed: the store ranks the noisy vectors
    metas = [{"i": i} for i in range(len(DOCS))]
    ours = Chroma(collection_name="ours", embedding_function=pe, persist_directory=str(tmp_path / "a"))
    ours.add_texts(DOCS, metadatas=metas)
    plain = lc.Chroma(collection_name="plain", embedding_function=pe, persist_directory=str(tmp_path / "b"))
    plain.add_texts(DOCS, metadatas=metas)
    assert plain._collection.configuration_json["hnsw"]["space"] == "l2"
    faiss_store = faiss_mod.FAISS.from_texts(DOCS, pe, metadatas=metas)
    Z = pe.embed_array(DOCS)
    for q in QUERIES:
        exact = np.argsort(-scores(pe.embed_query_array([q]), Z, pe.space)[0])[:5].tolist()
        assert _ids_by_rank(ours.similarity_search(q, k=5)) == exact
        assert _ids_by_rank(plain.similarity_search(q, k=5)) == exact
        assert _ids_by_rank(faiss_store.similarity_search(q, k=5)) == exact
