"""The same edges on every store path: empty input adds nothing, a duplicate id follows the store
and is named, a text longer than the encoder's window is said once."""

from __future__ import annotations

import warnings

import pytest

from private_vectors import PrivateEmbedding
from private_vectors.errors import InvalidParameterError


def _ef():
    return PrivateEmbedding(model="fake", eps=20, sanitize=None)


def _chroma_collection(tmp_path, name):
    chromadb = pytest.importorskip("chromadb")
    from private_vectors.chroma import create_collection

    return create_collection(chromadb.PersistentClient(path=str(tmp_path)), name, _ef())


def test_empty_input_adds_nothing_on_every_path(tmp_path):
    from private_vectors.chroma import add_documents
    from private_vectors.integrations.faiss import PrivateFaissIndex

    col = _chroma_collection(tmp_path / "native", "empty")
    assert add_documents(col, ids=[], documents=[], store_raw_text=True) == [] and col.count() == 0
    index = PrivateFaissIndex(_ef())
    assert index.add_texts([]) == []
    pytest.importorskip("langchain_chroma")
    from private_vectors.langchain import Chroma

    store = Chroma(collection_name="empty", embedding_function=_ef(), persist_directory=str(tmp_path / "lc"))
    assert store.add_texts([]) == [] and store.add_documents([]) == [] and store._collection.count() == 0
    pytest.importorskip("langchain_community")
    pytest.importorskip("faiss")
    from private_vectors.langchain import FAISS

    assert FAISS.from_texts([], _ef()).index.ntotal == 0


def test_empty_input_adds_nothing_in_llamaindex_and_langchain_records(tmp_path):
    pytest.importorskip("llama_index.core")
    from private_vectors.llamaindex import (
        PrivateIngestionPipeline,
        SanitizeNodes,
        protect_documents,
    )

    ef = _ef()
    assert protect_documents(ef, []) == [] and list(SanitizeNodes(embedding=ef)([])) == []
    assert PrivateIngestionPipeline(embedding=ef, transformations=[]).run(documents=[]) == []
    pytest.importorskip("langchain_classic")
    from langchain_classic.storage import InMemoryByteStore

    from private_vectors.langchain import CacheBackedEmbeddings

    keyed = PrivateEmbedding(model="fake", eps=20, sanitize=None, key="edges-test-key-4Tz9Wq2Lp7")
    assert CacheBackedEmbeddings.from_bytes_store(keyed, InMemoryByteStore()).embed_documents([]) == []


def test_native_chroma_duplicate_ids_follow_add_and_upsert_and_are_named(tmp_path):
    from private_vectors.chroma import add_documents

    col = _chroma_collection(tmp_path, "dups")
    add_documents(col, ids=["a"], documents=["first"], store_raw_text=True)
    with pytest.warns(UserWarning, match="at position 0 of the batch.*keeps the stored"):
        add_documents(col, ids=["a"], documents=["second"], store_raw_text=True)
    assert col.get(ids=["a"])["documents"] == ["first"]  # Chroma's add keeps what it holds
    with pytest.warns(UserWarning, match="at position 0 of the batch.*replaced"):
        add_documents(col, ids=["a"], documents=["third"], store_raw_text=True, upsert=True)
    assert col.get(ids=["a"])["documents"] == ["third"]
    with pytest.raises(InvalidParameterError, match=r"1 id\(s\) repeated, at position 1 of the batch"):
        add_documents(col, ids=["b", "b"], documents=["x", "y"], store_raw_text=True)


def test_dropin_duplicate_ids_follow_each_store_and_are_named(tmp_path):
    pytest.importorskip("langchain_chroma")
    from private_vectors.langchain import Chroma

    store = Chroma(collection_name="dups", embedding_function=_ef(), persist_directory=str(tmp_path),
                   store_raw_text=True)
    store.add_texts(["first"], ids=["a"])
    with pytest.warns(UserWarning, match="at position 0 of the batch.*replaced"):
        store.add_texts(["second"], ids=["a"])  # langchain_chroma upserts
    assert store.get(ids=["a"])["documents"] == ["second"]
    with pytest.raises(InvalidParameterError, match=r"1 id\(s\) repeated, at position 1 of the batch"):
        store.add_texts(["x", "y"], ids=["b", "b"])
    pytest.importorskip("langchain_community")
    pytest.importorskip("faiss")
    from private_vectors.langchain import FAISS

    faiss_store = FAISS.from_texts(["first"], _ef(), ids=["a"], store_raw_text=True)
    with pytest.raises(InvalidParameterError, match=r"1 id\(s\) held, at position 0 of the batch"):
        faiss_store.add_texts(["second"], ids=["a"])
    with pytest.raises(InvalidParameterError, match=r"1 id\(s\) repeated, at position 1 of the batch"):
        faiss_store.add_texts(["x", "y"], ids=["b", "b"])


def test_faiss_index_names_where_the_held_id_is():
    from private_vectors.integrations.faiss import PrivateFaissIndex

    index = PrivateFaissIndex(_ef())
    index.add_texts(["first"], ids=["a"])
    with pytest.raises(InvalidParameterError, match=r"1 id\(s\) held, at position 0 of the batch"):
        index.add_texts(["second"], ids=["a"])


def test_a_text_beyond_the_encoder_window_is_said_once():
    from private_vectors.encoders.sentence_transformers import SentenceTransformerEncoder

    encoder = SentenceTransformerEncoder()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoder.encode(["A short note about the harbour budget."])
    long = "the committee met again to discuss the harbour budget " * 200  # ~2,000 tokens, > 256
    with pytest.warns(UserWarning, match="longer than the encoder's window of 256 tokens"):
        encoder.encode([long, "short"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoder.encode([long])  # once per encoder
