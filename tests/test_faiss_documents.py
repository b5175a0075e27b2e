"""PrivateFaissIndex: string ids, documents back, metadata through the text stage, a repr, key= on load."""

from __future__ import annotations

import pytest

pytest.importorskip("faiss")

from private_vectors import PrivateEmbedding
from private_vectors.errors import ConfigMismatchError, InvalidParameterError
from private_vectors.integrations.faiss import PrivateFaissIndex, StoredDocument

KEY = "faiss-documents-test-key-3Lp9"
TEXTS = ["Maria Lopez flew to Madrid on Monday.", "The cat sat on the mat.", "Rain is expected over the hills."]


def _ef(**kw):
    kw.setdefault("eps", 20)
    return PrivateEmbedding(concept="PII", model="fake", key=KEY, **kw)


def test_string_ids_and_documents_back(tmp_path):
    index = PrivateFaissIndex(_ef())
    assert index.add_texts(TEXTS, ids=["m", "c", "r"], metadatas=[{"author": "Maria Lopez"}, None, {"n": 1}]) \
        == ["m", "c", "r"]
    top = index.search_documents("The cat sat on the mat.", k=2)[0]
    assert isinstance(top, StoredDocument) and top.id == "c" and top.text == "The cat sat on the mat."
    assert 0 <= top.relevance <= 1
    maria = next(d for d in index.search_documents("flew to Madrid", k=3) if d.id == "m")
    meta = dict(maria.metadata)
    assert meta.pop("pv_restore").startswith("pvr1.")  # keyed text stage: the encrypted restore record
    assert "Maria" not in maria.text and meta == {"author": "<PERSON>"}
    index.save(tmp_path)
    loaded = PrivateFaissIndex.load(tmp_path, key=KEY)
    assert loaded.search_documents("The cat sat on the mat.", k=1)[0].id == "c"
    assert b"Maria" not in b"".join(p.read_bytes() for p in tmp_path.iterdir())
    with pytest.raises(ConfigMismatchError):
        PrivateFaissIndex.load(tmp_path, key="another-key-entirely-42xQ")


def test_ids_are_checked():
    index = PrivateFaissIndex(_ef())
    index.add_texts(TEXTS[:1], ids=["a"])
    with pytest.raises(InvalidParameterError):
        index.add_texts(TEXTS[1:2], ids=["a"])  # taken
    with pytest.raises(InvalidParameterError):
        index.add_texts(TEXTS[1:2], ids=[7])  # mixing int ids into a string-id index
    with pytest.raises(InvalidParameterError):
        index.add_texts(TEXTS[1:3], ids=["x"])  # one per text
    assert len(index) == 1


def test_repr_names_the_index_not_the_key():
    index = PrivateFaissIndex(_ef())
    index.add_texts(TEXTS)
    text = repr(index)
    assert text.startswith("PrivateFaissIndex(kind='flat', documents=3") and KEY not in text
