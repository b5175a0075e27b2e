"""Restore records through the LangChain FAISS drop-in, the LlamaIndex components and
PrivateFaissIndex with string ids (120 generated surrogate documents each, fake encoder):
restored text equals the original, no replaced value in any persisted byte, a wrong key and a
swapped record are refused."""

from __future__ import annotations

import pytest

from private_vectors import PrivateEmbedding
from private_vectors.restore import RESTORE_KEY, RestoreError, Restorer, restore
from test_restore import KEY, generated_documents
from test_restore_paths import _assert_no_plaintext, _persisted_bytes, _replaced_values, _wrong_key

N = 120


def _ef() -> PrivateEmbedding:
    return PrivateEmbedding(model="fake", concept="PII", sanitize="surrogate", key=KEY, eps=10)


def _clear_ef() -> PrivateEmbedding:
    """A keyed function whose stores keep the sanitized text in clear (the restore records beside it)."""
    return PrivateEmbedding(model="fake", concept="PII", sanitize="surrogate", key=KEY, eps=10, seal=False)


def test_langchain_faiss(tmp_path):
    pytest.importorskip("faiss")
    pytest.importorskip("langchain_community")
    from private_vectors.langchain import FAISS

    texts = generated_documents(N, seed=6)
    ids = [f"f{i}" for i in range(N)]
    ef = _ef()
    store = FAISS.from_texts(texts, ef, ids=ids, metadatas=[{"n": i} for i in range(N)])
    docs = store.get_by_ids(ids)
    assert all(RESTORE_KEY in d.metadata for d in docs)
    by_id = dict(zip(ids, texts, strict=True))
    assert [d.page_content for d in restore(docs, ef)] == texts
    restorer = Restorer.for_embedding(ef)
    values = _replaced_values(restorer, ids, [d.page_content for d in docs], [d.metadata[RESTORE_KEY] for d in docs])
    store.save_local(str(tmp_path / "lf"))
    _assert_no_plaintext(_persisted_bytes(tmp_path / "lf"), values)

    ef2 = _ef()
    loaded = FAISS.load_local(str(tmp_path / "lf"), ef2)
    hits = loaded.similarity_search("Who flew on Friday?", k=5)
    assert [d.page_content for d in restore(hits, ef2)] == [by_id[d.id] for d in hits]
    with pytest.raises(RestoreError):
        restore(hits[:1], restorer=_wrong_key(ef2))
    swapped = hits[0].model_copy(update={"metadata": {**hits[0].metadata, RESTORE_KEY: hits[1].metadata[RESTORE_KEY]}})
    with pytest.raises(RestoreError):
        restore([swapped], ef2)


def test_llamaindex(tmp_path):
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.schema import MetadataMode

    from private_vectors.integrations.restoring import RestorePostprocessor
    from private_vectors.llamaindex import (
        PrivateLlamaEmbedding,
        SanitizeNodes,
        load_index,
        persist_index,
    )

    texts = generated_documents(N, seed=7)
    ef = _clear_ef()
    documents = [Document(text=t, id_=f"li{i}") for i, t in enumerate(texts)]
    nodes = SanitizeNodes(embedding=ef)(documents)
    assert all(RESTORE_KEY in n.metadata for n in nodes)
    assert all(RESTORE_KEY not in n.get_content(metadata_mode=MetadataMode.EMBED)
               and RESTORE_KEY not in n.get_content(metadata_mode=MetadataMode.LLM) for n in nodes)
    assert [n.text for n in restore(nodes, ef)] == texts
    index = VectorStoreIndex(nodes, embed_model=PrivateLlamaEmbedding(embedding=ef))
    restorer = Restorer.for_embedding(ef)
    values = _replaced_values(restorer, [n.node_id for n in nodes], [n.text for n in nodes],
                              [n.metadata[RESTORE_KEY] for n in nodes])
    persist_index(index, tmp_path / "li")
    _assert_no_plaintext(_persisted_bytes(tmp_path / "li"), values)

    loaded = load_index(tmp_path / "li", key=KEY)
    hits = loaded.as_retriever(similarity_top_k=4).retrieve("Who flew to Madrid?")
    by_text = {n.text: t for n, t in zip(nodes, texts, strict=True)}
    back = RestorePostprocessor(loaded._embed_model.embedding).postprocess_nodes(hits)
    assert [n.node.text for n in back] == [by_text[h.node.text] for h in hits]
    with pytest.raises(RestoreError):
        restore(hits[:1], restorer=_wrong_key(ef))


def test_private_faiss_index_string_ids(tmp_path):
    pytest.importorskip("faiss")
    from private_vectors.integrations.faiss import PrivateFaissIndex

    texts = generated_documents(N, seed=8)
    ids = [f"s{i}" for i in range(N)]
    ef = _clear_ef()
    index = PrivateFaissIndex(ef)
    assert index.add_texts(texts, ids=ids) == ids
    assert index.restore_texts(ids) == texts
    hits = index.search_documents("Who flew on Monday?", k=5)
    by_id = dict(zip(ids, texts, strict=True))
    assert [d.text for d in restore(hits, ef)] == [by_id[d.id] for d in hits]
    index.save(tmp_path / "fs")
    loaded = PrivateFaissIndex.load(tmp_path / "fs", _clear_ef())
    assert loaded.restore_texts(ids[:5]) == texts[:5]
    with pytest.raises(RestoreError):  # a record under another id does not open
        restore([(ids[1], loaded.texts[loaded._by_key[ids[0]]], loaded.restore_records[loaded._by_key[ids[0]]])], ef)
