"""LangChain's records keyed by content: CacheBackedEmbeddings, index() with a record manager,
ParentDocumentRetriever's docstore (private_vectors.integrations.langchain_records)."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("langchain_classic")
pytest.importorskip("langchain_chroma")

from langchain_classic.indexes import SQLRecordManager
from langchain_classic.storage import InMemoryByteStore, InMemoryStore
from langchain_core.documents import Document
from langchain_core.indexing import index as plain_index
from langchain_text_splitters import RecursiveCharacterTextSplitter

from private_vectors import PrivateEmbedding
from private_vectors.errors import InvalidParameterError, PrivacyWarning
from private_vectors.langchain import (
    CacheBackedEmbeddings,
    Chroma,
    ParentDocumentRetriever,
    index,
)

KEY = "langchain-records-key-8Wq3Zr5t"
TEXTS = ["Maria Lopez flew to Madrid on Monday.", "Carlos Ruiz signed the lease yesterday."]
METAS = [{"source": "/notes/maria_lopez.txt"}, {"source": "/notes/carlos_ruiz.txt"}]


def _ef(key=KEY, **kw):
    kw.setdefault("eps", 20)
    return PrivateEmbedding(concept="PII", model="fake", key=key, **kw)


def _keys(store) -> list[str]:
    return list(store.yield_keys())


def test_a_plain_store_over_the_cache_warns_that_it_keeps_the_raw_text():
    from langchain_core.vectorstores import InMemoryVectorStore

    cached = CacheBackedEmbeddings.from_bytes_store(_ef(), InMemoryByteStore(), namespace="ns:")
    with pytest.warns(PrivacyWarning, match="the store keeps the raw text"):
        InMemoryVectorStore(cached).add_texts(TEXTS)


def test_cache_keys_are_keyed_hmacs_of_text_and_configuration():
    store = InMemoryByteStore()
    cached = CacheBackedEmbeddings.from_bytes_store(_ef(), store, namespace="ns:")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)  # no store is involved: the cache keeps no text
        cached.embed_documents(TEXTS)
    keys = _keys(store)
    assert len(keys) == 2 and all(k.startswith("ns:") and len(k) == 3 + 64 for k in keys)
    plain = InMemoryByteStore()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        CacheBackedEmbeddings.from_bytes_store(_ef(), plain, namespace="ns:", key_encoder="sha256").embed_documents(
            TEXTS)
    assert not set(keys) & set(_keys(plain))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        again = InMemoryByteStore()
        CacheBackedEmbeddings.from_bytes_store(_ef(), again, namespace="ns:").embed_documents(TEXTS)
        assert sorted(_keys(again)) == sorted(keys)  # stable for the same key and configuration
        for other in (_ef(key="another-key-3Nw8Rt6Yp1"), _ef(eps=10)):
            store3 = InMemoryByteStore()
            CacheBackedEmbeddings.from_bytes_store(other, store3, namespace="ns:").embed_documents(TEXTS)
            assert not set(_keys(store3)) & set(keys)


def test_cache_needs_a_key_and_warns_for_unkeyed_choices():
    with pytest.raises(InvalidParameterError, match="underlying_embeddings"):
        CacheBackedEmbeddings.from_bytes_store(PrivateEmbedding(concept="PII", model="fake", eps=20),
                                               InMemoryByteStore())
    with pytest.warns(PrivacyWarning, match="unkeyed hash"):
        CacheBackedEmbeddings.from_bytes_store(_ef(), InMemoryByteStore(), key_encoder="blake2b")
    with pytest.warns(PrivacyWarning, match="no noise"):
        CacheBackedEmbeddings.from_bytes_store(_ef(), InMemoryByteStore(), query_embedding_cache=True)


def test_drop_in_chroma_through_the_cache_stores_sanitized_text_and_reuses_vectors(tmp_path):
    cache = InMemoryByteStore()
    cached = CacheBackedEmbeddings.from_bytes_store(_ef(seal=False), cache)  # (a sealed store seals fresh vectors)
    store = Chroma(collection_name="cached", embedding_function=cached, persist_directory=str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        store.add_texts(TEXTS, metadatas=METAS, ids=["a", "b"])
    first = store.get(ids=["a"], include=["documents", "embeddings", "metadatas"])
    assert "Maria" not in first["documents"][0] and "maria" not in first["metadatas"][0]["source"]
    assert len(_keys(cache)) == 2
    store.add_texts(TEXTS[:1], metadatas=METAS[:1], ids=["c"])  # a hit: the cached vector, no new entry
    again = store.get(ids=["c"], include=["embeddings"])
    assert len(_keys(cache)) == 2 and list(again["embeddings"][0]) == pytest.approx(list(first["embeddings"][0]))


def _docs():
    return [Document(page_content=t, metadata=m) for t, m in zip(TEXTS, METAS, strict=True)]


def test_index_keys_records_and_ids_by_keyed_hmacs(tmp_path):
    records = SQLRecordManager("chroma/x", db_url=f"sqlite:///{tmp_path / 'records.sqlite'}")
    records.create_schema()
    store = Chroma(collection_name="indexed", embedding_function=_ef(), persist_directory=str(tmp_path / "c"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        done = index(_docs(), records, store, cleanup="incremental", source_id_key="source")
    assert done["num_added"] == 2
    keys = records.list_keys()
    assert len(keys) == 2 and all(len(k) == 64 for k in keys) and set(store.get()["ids"]) == set(keys)
    groups = {g for g in records.list_keys(group_ids=None)}
    assert groups == set(keys)
    blob = (tmp_path / "records.sqlite").read_bytes().lower()
    assert b"maria" not in blob and b"carlos" not in blob
    assert index(_docs(), records, store, cleanup="incremental", source_id_key="source")["num_skipped"] == 2


def test_index_refuses_without_a_key_and_names_a_missing_source(tmp_path):
    records = SQLRecordManager("chroma/y", db_url=f"sqlite:///{tmp_path / 'r.sqlite'}")
    records.create_schema()
    unkeyed = Chroma(collection_name="unkeyed", embedding_function=PrivateEmbedding(concept="PII", model="fake", eps=20),
                     persist_directory=str(tmp_path / "u"))
    with pytest.raises(InvalidParameterError, match="vector_store"):
        index(_docs(), records, unkeyed)
    store = Chroma(collection_name="keyed", embedding_function=_ef(), persist_directory=str(tmp_path / "k"))
    with pytest.raises(InvalidParameterError, match="source_id_key") as caught:
        index([Document(page_content=TEXTS[0])], records, store, cleanup="incremental", source_id_key="source")
    assert "Maria" not in str(caught.value)


def test_plain_index_into_the_drop_in_warns_once(tmp_path):
    records = SQLRecordManager("chroma/z", db_url=f"sqlite:///{tmp_path / 'r.sqlite'}")
    records.create_schema()
    store = Chroma(collection_name="plainidx", embedding_function=_ef(), persist_directory=str(tmp_path / "c"))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        plain_index(_docs(), records, store, key_encoder="sha256")
        plain_index([Document(page_content="Ana Diaz met Tom Hall.")], records, store, key_encoder="sha256")
    assert sum(issubclass(w.category, PrivacyWarning) and "indexing.index" in str(w.message) for w in record) == 1


def test_parent_docstore_keeps_sanitized_parents_the_key_holder_restores(tmp_path):
    from private_vectors.restore import restore

    ef = _ef(sanitize="surrogate", seal=False)  # the clear store (sealed parents: tests/test_sealed_chroma.py)
    docstore = InMemoryStore()
    store = Chroma(collection_name="children", embedding_function=ef, persist_directory=str(tmp_path))
    retriever = ParentDocumentRetriever(vectorstore=store, docstore=docstore,
                                       child_splitter=RecursiveCharacterTextSplitter(chunk_size=20, chunk_overlap=0))
    retriever.add_documents(_docs())
    parents = [docstore.mget([k])[0] for k in docstore.yield_keys()]
    assert len(parents) == 2 and not any("Maria" in p.page_content or "maria" in str(p.metadata) for p in parents)
    assert sorted(d.page_content for d in restore(parents, ef)) == sorted(TEXTS)
    found = retriever.invoke("flight to Madrid")
    assert found and all("Maria" not in d.page_content for d in found)
