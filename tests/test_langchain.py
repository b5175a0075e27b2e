"""LangChain: Embeddings interface, async, langchain_chroma.Chroma, chroma_store drift check."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

pytest.importorskip("langchain_core")
langchain_chroma = pytest.importorskip("langchain_chroma")

from langchain_core.embeddings import Embeddings  # noqa: E402

from private_vectors import PrivateEmbedding  # noqa: E402
from private_vectors.embedding import KEY_ENV  # noqa: E402
from private_vectors.errors import ConfigMismatchError  # noqa: E402
from private_vectors.integrations.langchain import chroma_store  # noqa: E402

TOPICS = ["cough fever patient", "revenue profit quarter", "trail snow mountain", "flight airport travel"]
DOCS = [f"{t} note {i}" for i in range(5) for t in TOPICS]


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


def test_is_a_langchain_embeddings():
    pe = PrivateEmbedding(model="fake")
    assert isinstance(pe, Embeddings)
    docs = pe.embed_documents(DOCS[:2])
    assert len(docs) == 2 and len(docs[0]) == 64 and all(isinstance(x, float) for x in docs[0])


def test_async_matches_sync_distribution_and_streams_are_independent():
    pe = PrivateEmbedding(model="fake:128", eps=10, store_geometry="none")  # the mechanism's own noise
    clean = pe.encoder.encode(["cough fever patient"])[0]

    async def many():
        return await asyncio.gather(*[pe.aembed_documents(["cough fever patient"]) for _ in range(30)])

    rows = np.array([r[0] for r in asyncio.run(many())])
    assert len({tuple(np.round(r, 6)) for r in rows}) == 30  # no two calls share a stream
    dist = np.linalg.norm(rows - clean, axis=1)
    assert dist.mean() == pytest.approx(128 * pe.unit / 10, rel=0.1)
    q = asyncio.run(pe.aembed_query("cough fever patient"))
    np.testing.assert_allclose(q, clean, atol=1e-6)  # clean query policy


def test_langchain_chroma_store_with_private_embedding(tmp_path):
    pe = PrivateEmbedding(model="fake", eps=40, random_state=0)
    store = langchain_chroma.Chroma(collection_name="notes", embedding_function=pe,
                                    persist_directory=str(tmp_path))
    store.add_texts(DOCS)
    hits = store.similarity_search("trail snow mountain", k=3)
    assert all("trail" in d.page_content for d in hits)
    stored = np.asarray(store._collection.get(include=["embeddings"])["embeddings"])
    assert np.linalg.norm(stored - pe.encoder.encode(store._collection.get()["documents"]), axis=1).min() > 0.05
    retriever = store.as_retriever(search_kwargs={"k": 2})
    assert all("flight" in d.page_content for d in retriever.invoke("flight airport travel"))


def test_chroma_store_sets_space_and_refuses_drift(tmp_path):
    pe = PrivateEmbedding(model="fake", eps=20)
    store = chroma_store(pe, collection_name="notes", persist_directory=str(tmp_path))
    store.add_texts(DOCS)
    assert store._collection.configuration_json["hnsw"]["space"] == "cosine"
    assert store._collection.configuration_json["embedding_function"]["name"] == "private_vectors"
    again = chroma_store(PrivateEmbedding(model="fake", eps=20), collection_name="notes",
                         persist_directory=str(tmp_path))
    assert len(again.similarity_search("cough fever patient", k=2)) == 2
    with pytest.raises(ConfigMismatchError, match="eps"):
        chroma_store(PrivateEmbedding(model="fake", eps=5), collection_name="notes", persist_directory=str(tmp_path))
