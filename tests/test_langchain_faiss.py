"""The LangChain FAISS drop-in: sanitized text only, JSON + FAISS index (no pickle), config and key checks."""

from __future__ import annotations

import json
import pickle
import warnings

import pytest

pytest.importorskip("faiss")
pytest.importorskip("langchain_community")

from private_vectors import PrivateEmbedding
from private_vectors.errors import (
    ArtefactError,
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
    PrivacyWarning,
)
from private_vectors.langchain import FAISS

KEY = "langchain-faiss-test-key-7Qw2"
TEXTS = ["Maria Lopez flew to Madrid on Monday.", "The cat sat on the mat.", "Rain is expected over the hills."]


def _ef(**kw):
    """A keyed function whose stores keep the sanitized text in clear (sealed stores:
    tests/test_sealed_paths.py)."""
    kw.setdefault("eps", 20)
    kw.setdefault("seal", False)
    return PrivateEmbedding(concept="PII", model="fake", key=KEY, **kw)


def test_is_a_langchain_faiss():
    from langchain_community.vectorstores import FAISS as Community  # noqa: N811

    assert issubclass(FAISS, Community)


def test_stores_sanitized_text_and_metadata_only(tmp_path):
    store = FAISS.from_texts(TEXTS, _ef(), metadatas=[{"author": "Maria Lopez"}, {}, {"n": 3}])
    stored = [store.docstore.search(i) for i in store.index_to_docstore_id.values()]
    assert all("Maria" not in d.page_content and "Lopez" not in d.page_content for d in stored)
    assert all(d.metadata.pop("pv_restore").startswith("pvr1.") for d in stored)  # keyed: encrypted restore records
    assert stored[0].metadata == {"author": "<PERSON>"} and stored[2].metadata == {"n": 3}
    store.save_local(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.faiss", "index.json"]
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"Maria" not in blob and b"Lopez" not in blob and b"Madrid" not in blob


def test_save_load_round_trip_without_pickle(tmp_path, monkeypatch):
    store = FAISS.from_texts(TEXTS, _ef(), ids=["a", "b", "c"])
    store.save_local(str(tmp_path), index_name="notes")
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("load_local unpickled"))
    loaded = FAISS.load_local(str(tmp_path), index_name="notes", key=KEY)
    assert loaded.similarity_search("The cat sat on the mat.", k=1)[0].id == "b"
    assert json.loads((tmp_path / "notes.json").read_text())["embedding"]["eps"] == 20


def test_load_refuses_another_config_or_key(tmp_path):
    FAISS.from_texts(TEXTS, _ef()).save_local(str(tmp_path))
    with pytest.raises(ConfigMismatchError, match="eps"):
        FAISS.load_local(str(tmp_path), _ef(eps=10))
    with pytest.raises(ConfigMismatchError):
        FAISS.load_local(str(tmp_path), key="another-key-entirely-42xQ")
    with pytest.raises(InvalidParameterError, match="key"):
        FAISS.load_local(str(tmp_path), _ef(), key=KEY)


def test_load_refuses_a_pickle_folder(tmp_path):
    (tmp_path / "index.pkl").write_bytes(pickle.dumps({"x": 1}))
    (tmp_path / "index.faiss").write_bytes(b"")
    with pytest.raises(ArtefactError, match=r"index\.pkl"):
        FAISS.load_local(str(tmp_path), _ef())


def test_pickle_forms_and_precomputed_vectors_are_refused():
    store = FAISS.from_texts(TEXTS, _ef())
    with pytest.raises(InvalidParameterError):
        store.serialize_to_bytes()
    with pytest.raises(InvalidParameterError):
        FAISS.deserialize_from_bytes(b"", _ef())
    with pytest.raises(InvalidParameterError):
        store.add_embeddings([("Maria Lopez", [0.0] * 64)])


def test_protected_path_stays_silent_and_metadata_warns_without_text_stage():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        FAISS.from_texts(TEXTS, _ef())
    bare = PrivateEmbedding(model="fake", eps=20, sanitize=None)
    with pytest.warns(PrivacyWarning, match="metadata"):
        store = FAISS.from_texts(TEXTS[:1], bare, metadatas=[{"author": "Maria Lopez"}])
    assert store.docstore.search(store.index_to_docstore_id[0]).page_content == ""
    kept = FAISS.from_texts(TEXTS[:1], _ef(), metadatas=[{"author": "Maria Lopez"}], metadata_text="keep")
    meta = dict(kept.docstore.search(kept.index_to_docstore_id[0]).metadata)
    assert meta.pop("pv_restore").startswith("pvr1.") and meta == {"author": "Maria Lopez"}


def test_relevance_is_calibrated_and_in_range():
    store = FAISS.from_texts(TEXTS, _ef(eps=10))
    plain = store.similarity_search_with_score("The cat sat on the mat.", k=1)[0][1]
    relevance = store.similarity_search_with_relevance_scores("The cat sat on the mat.", k=1)[0][1]
    assert 0 <= relevance <= 1 and relevance > plain


def test_merge_takes_only_drop_in_stores_of_the_same_config():
    from langchain_community.vectorstores import FAISS as Community  # noqa: N811

    store = FAISS.from_texts(TEXTS[:1], _ef())
    store.merge_from(FAISS.from_texts(TEXTS[1:], _ef()))
    assert len(store.index_to_docstore_id) == 3
    with pytest.raises(ConfigMismatchError):
        store.merge_from(FAISS.from_texts(TEXTS[1:], _ef(eps=10)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        plain = Community.from_texts(TEXTS[1:], _ef())
    with pytest.raises(InvalidTypeError):
        store.merge_from(plain)


def test_another_embeddings_needs_store_raw_text():
    class Plain:
        def embed_documents(self, texts):
            return [[1.0, 0.0] for _ in texts]

        def embed_query(self, text):
            return [1.0, 0.0]

    with pytest.raises(InvalidTypeError):
        FAISS.from_texts(TEXTS, Plain())
    assert FAISS.from_texts(TEXTS, Plain(), store_raw_text=True).store_raw_text
