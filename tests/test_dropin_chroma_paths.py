"""The LangChain Chroma drop-in: metadata through the text stage, key= on reopen, calibrated relevance."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("langchain_chroma")

from private_vectors import PrivateEmbedding
from private_vectors.errors import ConfigMismatchError, InvalidParameterError, PrivacyWarning
from private_vectors.langchain import Chroma

KEY = "dropin-chroma-test-key-8Hn4"
TEXTS = ["Maria Lopez flew to Madrid on Monday.", "The cat sat on the mat."]


def _ef(**kw):
    kw.setdefault("eps", 10)
    return PrivateEmbedding(concept="PII", model="fake", key=KEY, **kw)


def test_metadata_is_sanitized_and_the_path_is_silent(tmp_path):
    store = Chroma(collection_name="meta", embedding_function=_ef(), persist_directory=str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        store.add_texts(TEXTS, metadatas=[{"author": "Maria Lopez", "n": 1}, {"n": 2}], ids=["a", "b"])
    (got,) = store.get_by_ids(["a"])  # sealed (a key): the key holder's read opens the record
    meta = {k: v for k, v in got.metadata.items() if k != "pv_restore"}  # (the encrypted restore record)
    assert meta == {"author": "<PERSON>", "n": 1} and "Maria" not in got.page_content
    assert list(store.get(ids=["a"], include=["metadatas"])["metadatas"][0]) == ["pv_sealed"]


def test_metadata_without_a_text_stage_warns_once(tmp_path):
    bare = PrivateEmbedding(model="fake", eps=10, sanitize=None)
    store = Chroma(collection_name="bare", embedding_function=bare, persist_directory=str(tmp_path))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        store.add_texts(TEXTS[:1], metadatas=[{"author": "Maria Lopez"}])
        store.add_texts(TEXTS[1:], metadatas=[{"author": "Carlos Ruiz"}])
    assert sum("metadata" in str(w.message) for w in record if issubclass(w.category, PrivacyWarning)) == 1


def test_reopen_with_the_key_parameter(tmp_path, monkeypatch):
    monkeypatch.delenv("PRIVATE_VECTORS_KEY", raising=False)
    Chroma(collection_name="keyed", embedding_function=_ef(), persist_directory=str(tmp_path)).add_texts(TEXTS)
    store = Chroma(collection_name="keyed", persist_directory=str(tmp_path), key=KEY)
    assert store.similarity_search("The cat sat on the mat.", k=1)[0].page_content == TEXTS[1]
    with pytest.raises(ConfigMismatchError):
        Chroma(collection_name="keyed", persist_directory=str(tmp_path), key="another-key-entirely-42xQ")
    with pytest.raises(InvalidParameterError, match="key"):
        Chroma(collection_name="keyed", embedding_function=_ef(), persist_directory=str(tmp_path), key=KEY)


def test_relevance_is_rescaled_to_the_stored_noise(tmp_path):
    store = Chroma(collection_name="rel", embedding_function=_ef(seal=False), persist_directory=str(tmp_path))
    store.add_texts(TEXTS)
    (_, calibrated), = store.similarity_search_with_relevance_scores("The cat sat on the mat.", k=1)
    (_, distance), = store.similarity_search_with_score("The cat sat on the mat.", k=1)
    assert 0 <= calibrated <= 1 and calibrated > 1 - distance
