"""FAISS: flat/IVF/HNSW from texts through PrivateEmbedding, save/load without pickle, drift refusal."""

from __future__ import annotations

import json

import numpy as np
import pytest

faiss = pytest.importorskip("faiss")

from private_vectors import PrivateEmbedding  # noqa: E402
from private_vectors.embedding import KEY_ENV  # noqa: E402
from private_vectors.errors import (  # noqa: E402
    ArtefactError,
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
    SealedStoreError,
)
from private_vectors.integrations.faiss import (  # noqa: E402
    INDEX_FILE,
    SIDECAR,
    PrivateFaissIndex,
    build_index,
)

TOPICS = ["cough fever patient", "revenue profit quarter", "trail snow mountain", "flight airport travel",
          "invoice payment bank", "court judge trial", "football match goal", "recipe oven bread"]
DOCS = [f"{t} note {i}" for i in range(12) for t in TOPICS]


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
@pytest.mark.parametrize("space", ["ip", "l2", "cosine"])
def test_build_and_search_every_kind(kind, space):
    pe = PrivateEmbedding(model="fake", eps=40, space=space, random_state=0)
    index = build_index(DOCS, pe, kind=kind, nlist=4 if kind == "ivf" else None, store_raw_text=True)
    assert len(index) == len(DOCS)
    hits = index.search_texts("cough fever patient", k=5)
    assert len(hits) == 5
    assert sum("cough" in text for _, _, text in hits) >= 4


def test_stored_vectors_are_perturbed():
    pe = PrivateEmbedding(model="fake", eps=10, random_state=0)
    index = build_index(DOCS[:8], pe)
    stored = index.stored_vectors()
    clean = pe.encoder.encode(DOCS[:8])
    assert np.all(np.linalg.norm(stored - clean, axis=1) > 0.3)


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_save_load_round_trip_without_pickle(tmp_path, kind):
    pe = PrivateEmbedding(model="fake", eps=30, key="k-0123456789abcdef")
    index = build_index(DOCS, pe, kind=kind, nlist=4 if kind == "ivf" else None)
    before = index.search(["trail snow mountain"], k=5)
    index.save(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {INDEX_FILE, SIDECAR}
    sidecar = json.loads((tmp_path / SIDECAR).read_text())
    assert sidecar["embedding"]["eps"] == 30 and "k" not in json.dumps(sidecar["embedding"]).split('"')
    loaded = PrivateFaissIndex.load(tmp_path, PrivateEmbedding(model="fake", eps=30, key="k-0123456789abcdef"))
    after = loaded.search(["trail snow mountain"], k=5)
    np.testing.assert_array_equal(before[1], after[1])
    with pytest.raises(SealedStoreError, match=r"^key: "):  # keyed: sealed by default, so the key is needed
        PrivateFaissIndex.load(tmp_path)
    rebuilt = PrivateFaissIndex.load(tmp_path, key="k-0123456789abcdef")  # embedding rebuilt from the sidecar
    assert rebuilt.embedding.eps == 30 and rebuilt.kind == kind
    new_ids = loaded.add_texts(["another bread recipe"])
    assert new_ids == [len(DOCS)]


def test_load_refuses_conflicting_embedding_and_foreign_folders(tmp_path):
    build_index(DOCS[:16], PrivateEmbedding(model="fake", eps=10)).save(tmp_path / "a")
    for other in (PrivateEmbedding(model="fake", eps=11), PrivateEmbedding(model="fake:32", eps=10),
                  PrivateEmbedding(model="fake", eps=10, mechanism="gaussian"),
                  PrivateEmbedding(model="fake", eps=10, space="l2")):
        with pytest.raises(ConfigMismatchError):
            PrivateFaissIndex.load(tmp_path / "a", other)
    with pytest.raises(ArtefactError):
        PrivateFaissIndex.load(tmp_path / "missing")
    (tmp_path / "a" / SIDECAR).write_text('{"format": "something-else"}')
    with pytest.raises(ArtefactError, match="format"):
        PrivateFaissIndex.load(tmp_path / "a")


def test_bad_input_adds_nothing():
    index = build_index(DOCS[:4], PrivateEmbedding(model="fake"))
    with pytest.raises(InvalidParameterError):
        index.add_texts(["fine", ""])
    assert len(index) == 4
    with pytest.raises(InvalidParameterError, match="kind"):
        PrivateFaissIndex(PrivateEmbedding(model="fake"), kind="pq")
    with pytest.raises(InvalidParameterError, match="nlist"):
        build_index(DOCS[:3], PrivateEmbedding(model="fake"), kind="ivf", nlist=8)


def test_langchain_faiss_vector_store():
    lc_faiss = pytest.importorskip("langchain_community.vectorstores")
    pe = PrivateEmbedding(model="fake", eps=40, random_state=0)
    store = lc_faiss.FAISS.from_texts(DOCS, pe)
    hits = store.similarity_search("invoice payment bank", k=3)
    assert all("invoice" in d.page_content for d in hits)
    stored = store.index.reconstruct(0)
    assert not np.allclose(stored, pe.encoder.encode([DOCS[0]])[0], atol=1e-3)


def test_sidecar_holds_no_text_by_default(tmp_path):
    """Issue 16 point 5: main wrote every raw text into private_vectors.json by default."""
    secret_doc = "Maria Lopez, SSN 123-45-6789, flew to Madrid"
    pe = PrivateEmbedding(model="fake", eps=10, random_state=0)
    index = build_index([secret_doc, *DOCS[:4]], pe)
    assert index.texts[0] == ""
    folder = index.save(tmp_path / "idx")
    raw = b"".join(p.read_bytes() for p in folder.iterdir())
    assert b"Maria" not in raw and b"123-45-6789" not in raw
    loaded = PrivateFaissIndex.load(folder)
    assert len(loaded) == 5 and sorted(loaded.texts) == [0, 1, 2, 3, 4]
    assert loaded.search_texts("flew to Madrid", k=1)[0][2] == ""
    loaded.add_texts(["one more"])  # ids continue after a reload
    assert sorted(loaded.texts) == [0, 1, 2, 3, 4, 5]


def test_store_raw_text_is_an_explicit_opt_in(tmp_path):
    pe = PrivateEmbedding(model="fake", eps=10, random_state=0)
    index = build_index(DOCS[:3], pe, store_raw_text=True)
    folder = index.save(tmp_path / "idx")
    sidecar = json.loads((folder / "private_vectors.json").read_text())
    assert sidecar["store_raw_text"] is True and sidecar["texts"]["0"] == DOCS[0]
    assert PrivateFaissIndex.load(folder).texts[0] == DOCS[0]
    with pytest.raises(InvalidTypeError, match="store_raw_text"):
        PrivateFaissIndex(pe, store_raw_text="yes")
