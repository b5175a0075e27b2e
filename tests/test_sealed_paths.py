"""Sealed stores on the FAISS, LangChain FAISS, LlamaIndex and Ray paths.

Per path: a byte scan of every persisted file (tests/_byte_scan.py) finds no planted raw value
and no run of four words of a stored sanitized text (a clear store written the same way is the
scan's positive control); the key holder gets the sanitized text back, ranked by the exact
vectors; no key: a SealedStoreError naming ``key``; reopen with the key; a store written
unsealed opens as before; delete removes the document (and, with a keyring, a copy taken
before cannot open it). FakeEncoder embeddings with the PII text stage: small and fast.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _byte_scan import scan
from private_vectors import PrivateEmbedding
from private_vectors.errors import SealedRecordError, SealedStoreError
from private_vectors.keys import KEY_ENV
from private_vectors.sealed import SEALED_KEY, Sealing

KEY = "sealed-paths-test-key-5Fq8Wz2Lr7"
NAMES = ["Maria Lopez", "José Müller", "Zoë Ångström", "maria.lopez@example.org"]
DOCS = [
    "Maria Lopez lives in Berlin and takes the early train to work.",
    "José Müller phoned about the unpaid invoice for the printer repair.",
    "Zoë Ångström",  # a document under four words, a non-ASCII name
    "Write to maria.lopez@example.org before the quarterly budget review.",
    "The winter timetable moves every evening train by ten minutes.",
]
IDS = ["d-maria", "d-jose", "d-zoe", "d-mail", "d-train"]
METAS: list[dict[str, Any] | None] = [
    {"author": "Maria Lopez", "topic": "travel", "year": 2021},
    {"author": "José Müller", "topic": "billing"},
    None,
    {"note": "sent from the Lisbon office by Zoë Ångström", "topic": "billing"},
    {"topic": "travel"},
]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    warnings.simplefilter("ignore", DeprecationWarning)


def _ef(seal: Any = None, key: str | None = KEY) -> PrivateEmbedding:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateEmbedding(model="fake", eps=10, concept="PII", key=key, seal=seal)


def _sanitized(ef: PrivateEmbedding) -> list[str]:
    """What the store keeps as text (the sanitized documents and metadata values)."""
    out = list(ef.sanitize_documents(DOCS))
    out += [v for m in METAS for v in (m or {}).values() if isinstance(v, str)]
    return [ef.sanitize_documents([t])[0] for t in out]


def _raw_values() -> list[str]:
    return [*NAMES, "Lisbon", "Berlin"]


# -- FAISS: PrivateFaissIndex ---------------------------------------------------------------------
faiss = pytest.importorskip("faiss")


def _faiss_store(folder: Path, seal: Any = None, kind: str = "flat", **kw: Any) -> Any:
    from private_vectors.integrations.faiss import PrivateFaissIndex

    index = PrivateFaissIndex(_ef(seal), kind=kind, **kw)
    index.add_texts(DOCS, ids=IDS, metadatas=METAS)
    index.save(folder)
    return index


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_faiss_sealed_files_hold_no_text_and_the_clear_store_does(tmp_path: Path, kind: str) -> None:
    sealed = _faiss_store(tmp_path / "sealed", kind=kind)
    clear = _faiss_store(tmp_path / "clear", seal=False, kind=kind)
    texts = _sanitized(sealed.embedding)
    assert scan([tmp_path / "sealed"], _raw_values(), texts) == []
    found = scan([tmp_path / "clear"], _raw_values(), texts)
    assert found and not [f for f in found if "value" in f]  # control: the clear store keeps sanitized text only
    assert all(t.startswith("pv-sealed:") for t in sealed.texts.values())
    assert all(set(m) == {SEALED_KEY} for m in sealed.metadata.values())
    assert clear.texts[1].startswith("<PERSON> phoned")


def test_faiss_key_holder_reads_sanitized_text_reranked_by_exact_vectors(tmp_path: Path) -> None:
    index = _faiss_store(tmp_path / "s")
    ef = index.embedding
    hits = index.search_documents("Who takes the early train to work in Berlin?", k=3)
    assert hits[0].id == "d-maria"
    assert hits[0].text == ef.sanitize_documents([DOCS[0]])[0]
    assert hits[0].metadata["author"] == "<PERSON>" and hits[0].metadata["year"] == 2021
    assert SEALED_KEY not in hits[0].metadata
    _, clean = ef.pipeline.embed_queries(["Who takes the early train to work in Berlin?"], exact=True)
    _, _, exact = ef.pipeline.embed_documents(DOCS, exact=True)
    want = (exact / np.linalg.norm(exact, axis=1, keepdims=True)) @ (clean[0] / np.linalg.norm(clean[0]))
    got = {h.id: h.score for h in hits}
    order = [IDS[i] for i in np.argsort(-want)[:3]]
    assert list(got) == order
    assert got["d-maria"] == pytest.approx(float(want[0]), abs=2e-3)  # float16 exact vectors
    scores, ids = index.search(["Who takes the early train to work in Berlin?"], k=2)
    assert ids.shape == (1, 2) and ids[0, 0] == 0 and scores[0, 0] == pytest.approx(got["d-maria"])
    assert index.restore_texts(["d-maria"]) == [DOCS[0]]


def test_faiss_sealed_index_needs_the_key_and_reopens_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from private_vectors.integrations.faiss import PrivateFaissIndex

    _faiss_store(tmp_path / "s")
    with pytest.raises(SealedStoreError, match=r"^key: "):
        PrivateFaissIndex.load(tmp_path / "s")
    again = PrivateFaissIndex.load(tmp_path / "s", key=KEY)
    assert again.sealed
    assert again.search_documents("unpaid invoice printer repair", k=1)[0].id == "d-jose"
    again.add_texts(["The printer in room four is fixed."], ids=["d-new"])
    again.save(tmp_path / "s")
    monkeypatch.setenv(KEY_ENV, KEY)
    third = PrivateFaissIndex.load(tmp_path / "s")
    assert len(third) == len(DOCS) + 1
    assert third.search_documents("printer in room four fixed", k=1)[0].text == "The printer in room four is fixed."


def test_faiss_unsealed_stores_open_and_take_writes_as_before(tmp_path: Path) -> None:
    import json

    from private_vectors.integrations.faiss import SIDECAR, PrivateFaissIndex

    _faiss_store(tmp_path / "clear", seal=False)
    side = tmp_path / "clear" / SIDECAR
    record = json.loads(side.read_text())
    del record["embedding"]["seal"]  # a store saved before sealing existed
    side.write_text(json.dumps(record))
    index = PrivateFaissIndex.load(tmp_path / "clear", key=KEY)
    assert not index.sealed
    assert index.search_documents("unpaid invoice printer repair", k=1)[0].text.startswith("<PERSON> phoned")
    index.add_texts(["Karl Huber fixed the printer."], ids=["d-new"])
    assert "Karl" not in index.texts[len(DOCS)] and index.texts[len(DOCS)].endswith("fixed the printer.")
    assert index.delete(["d-new"]) == 1 and len(index) == len(DOCS)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_faiss_delete_removes_vector_record_and_query_index_entries(tmp_path: Path, kind: str) -> None:
    from private_vectors.integrations.faiss import PrivateFaissIndex

    index = _faiss_store(tmp_path / "s", kind=kind, **({"nlist": 2} if kind == "ivf" else {}))
    entries = len(index.embedding.sanitizer.index)
    assert index.delete(["d-zoe"]) == 1
    assert len(index) == len(DOCS) - 1 and "d-zoe" not in index._by_key
    assert len(index.embedding.sanitizer.index) < entries  # Zoë's entries (only she held them) are gone
    assert "d-zoe" not in [d.id for d in index.search_documents("Zoë Ångström", k=5)]
    index.save(tmp_path / "s")
    again = PrivateFaissIndex.load(tmp_path / "s", key=KEY)
    assert len(again) == len(DOCS) - 1
    assert len(again.embedding.sanitizer.index) == len(index.embedding.sanitizer.index)
    with pytest.raises(Exception, match="ids"):
        again.delete(["d-zoe"])


def test_faiss_delete_with_a_keyring_shreds_a_copy_taken_before(tmp_path: Path) -> None:
    from private_vectors.integrations.faiss import PrivateFaissIndex

    ring = tmp_path / "keys" / "ring.json"
    _faiss_store(tmp_path / "s", seal=Sealing(keyring=ring))
    shutil.copytree(tmp_path / "s", tmp_path / "backup")
    index = PrivateFaissIndex.load(tmp_path / "s", key=KEY, seal=Sealing(keyring=ring))
    index.delete(["d-maria"])
    index.save(tmp_path / "s")
    old = PrivateFaissIndex.load(tmp_path / "backup", key=KEY, seal=Sealing(keyring=ring))
    with pytest.raises(SealedRecordError, match="deleted"):
        old.restore_texts(["d-maria"])
    assert old.restore_texts(["d-jose"]) == [DOCS[1]]


def test_faiss_keyed_ids_hide_the_ids(tmp_path: Path) -> None:
    from private_vectors.integrations.faiss import PrivateFaissIndex

    _faiss_store(tmp_path / "s", seal=Sealing(ids="hmac"))
    assert scan([tmp_path / "s"], IDS) == []
    index = PrivateFaissIndex.load(tmp_path / "s", key=KEY)
    assert index.search_documents("unpaid invoice printer repair", k=1)[0].id == "d-jose"
    assert index.delete(["d-jose"]) == 1 and len(index) == len(DOCS) - 1


# -- LangChain FAISS drop-in: private_vectors.langchain.FAISS -------------------------------------
def _lc_store(folder: Path, seal: Any = None) -> Any:
    pytest.importorskip("langchain_community")
    from private_vectors.langchain import FAISS

    store = FAISS.from_texts(DOCS, _ef(seal), metadatas=METAS, ids=IDS)
    store.save_local(str(folder))
    return store


def test_langchain_faiss_sealed_files_hold_no_text_and_the_clear_store_does(tmp_path: Path) -> None:
    sealed = _lc_store(tmp_path / "sealed")
    _lc_store(tmp_path / "clear", seal=False)
    texts = _sanitized(sealed.embedding_function)
    assert scan([tmp_path / "sealed"], _raw_values(), texts) == []
    assert scan([tmp_path / "clear"], _raw_values(), texts)  # control
    held = [sealed.docstore.search(i) for i in IDS]
    assert all(d.page_content.startswith("pv-sealed:") and set(d.metadata) == {SEALED_KEY} for d in held)


def test_langchain_faiss_key_holder_search_mmr_thresholds_and_filters(tmp_path: Path) -> None:
    from private_vectors.errors import InvalidParameterError

    store = _lc_store(tmp_path / "s", seal=Sealing(readable_metadata=["topic"]))
    ef = store.embedding_function
    query = "Who takes the early train to work in Berlin?"
    hits = store.similarity_search_with_score(query, k=3)
    assert hits[0][0].id == "d-maria" and hits[0][0].page_content == ef.sanitize_documents([DOCS[0]])[0]
    assert hits[0][0].metadata["author"] == "<PERSON>" and SEALED_KEY not in hits[0][0].metadata
    _, clean = ef.pipeline.embed_queries([query], exact=True)
    _, _, exact = ef.pipeline.embed_documents([DOCS[0]], exact=True)
    cos = float(exact[0] @ clean[0] / np.linalg.norm(exact[0]) / np.linalg.norm(clean[0]))
    assert hits[0][1] == pytest.approx(cos, abs=2e-3)  # the exact score, not the noisy one
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    rel = store.similarity_search_with_relevance_scores(query, k=5, score_threshold=cos - 1e-3)
    assert [d.id for d, _ in rel] == ["d-maria"]  # the threshold applies to the exact scores
    assert [d.id for d in store.as_retriever(search_kwargs={"k": 1}).invoke(query)] == ["d-maria"]
    mmr = store.max_marginal_relevance_search(query, k=2, fetch_k=5, lambda_mult=0.5)
    assert mmr[0].id == "d-maria" and len({d.id for d in mmr}) == 2
    assert all(not d.page_content.startswith("pv-sealed:") for d in mmr)
    billing = store.similarity_search(query, k=5, filter={"topic": "billing"})
    assert {d.id for d in billing} == {"d-jose", "d-mail"}
    with pytest.raises(InvalidParameterError, match=r"filter.*sealed"):
        store.similarity_search(query, filter={"author": "<PERSON>"})
    assert store.get_by_ids(["d-jose"])[0].page_content.startswith("<PERSON> phoned")
    import asyncio

    again = asyncio.run(store.asimilarity_search_with_score(query, k=3))  # async: the same exact re-rank
    assert [(d.id, round(s, 6)) for d, s in again] == [(d.id, round(s, 6)) for d, s in hits]
    by_vector = store.similarity_search_by_vector(ef.embed_query(query), k=3)  # clean policy: same order
    assert [d.id for d in by_vector] == [d.id for d, _ in hits]


def test_langchain_faiss_sealed_needs_the_key_reopens_and_deletes(tmp_path: Path) -> None:
    from private_vectors.langchain import FAISS

    store = _lc_store(tmp_path / "s")
    entries = len(store.embedding_function.sanitizer.index)
    with pytest.raises(SealedStoreError, match=r"^key: "):
        FAISS.load_local(str(tmp_path / "s"))
    again = FAISS.load_local(str(tmp_path / "s"), key=KEY)
    assert again.sealed and again.similarity_search("unpaid invoice printer repair", k=1)[0].id == "d-jose"
    again.delete(["d-zoe"])
    assert "d-zoe" not in again.index_to_docstore_id.values()
    assert len(again.embedding_function.sanitizer.index) < entries
    again.add_texts(["The printer in room four is fixed."], ids=["d-new"])
    again.save_local(str(tmp_path / "s"))
    third = FAISS.load_local(str(tmp_path / "s"), key=KEY)
    assert len(third.index_to_docstore_id) == len(DOCS)
    assert third.similarity_search("printer room four fixed", k=1)[0].page_content == "The printer in room four is fixed."


def test_langchain_faiss_unsealed_store_opens_as_before(tmp_path: Path) -> None:
    import json

    from private_vectors.langchain import FAISS

    _lc_store(tmp_path / "clear", seal=False)
    side = tmp_path / "clear" / "index.json"
    record = json.loads(side.read_text())
    del record["embedding"]["seal"]  # saved before sealing existed
    side.write_text(json.dumps(record))
    store = FAISS.load_local(str(tmp_path / "clear"), key=KEY)
    assert not store.sealed
    assert store.similarity_search("unpaid invoice printer repair", k=1)[0].page_content.startswith("<PERSON> phoned")
    store.add_texts(["Karl Huber fixed the printer."], ids=["d-new"])
    assert "Karl" not in store.docstore.search("d-new").page_content


def test_langchain_faiss_merges_only_stores_sealed_under_its_data_key() -> None:
    pytest.importorskip("langchain_community")
    from private_vectors.errors import InvalidParameterError
    from private_vectors.langchain import FAISS

    ef = _ef()
    store = FAISS.from_texts(DOCS[:2], ef, ids=IDS[:2])
    store.merge_from(FAISS.from_texts(DOCS[2:], ef, ids=IDS[2:]))  # one function: one data key
    assert store.similarity_search("winter timetable evening train", k=1)[0].id == "d-train"
    for other in (FAISS.from_texts(DOCS[2:], _ef(), ids=IDS[2:]), FAISS.from_texts(DOCS[2:], _ef(seal=False))):
        with pytest.raises(InvalidParameterError, match="target"):
            store.merge_from(other)


# -- LlamaIndex: PrivateIngestionPipeline, SanitizeNodes, persist_index, chroma_vector_store ------
def _li_docs() -> list[Any]:
    from llama_index.core import Document

    return [Document(text=t, metadata=dict(m or {}), id_=i) for t, m, i in zip(DOCS, METAS, IDS, strict=True)]


def _li_sanitized(ef: PrivateEmbedding) -> list[str]:
    """The sanitized chunk texts (one chunk per short document) and metadata values."""
    return _sanitized(ef)


def test_llamaindex_sealed_pipeline_cache_docstore_and_index_hold_no_text(tmp_path: Path) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.storage.docstore import SimpleDocumentStore

    from private_vectors.llamaindex import (
        PrivateIngestionPipeline,
        PrivateLlamaEmbedding,
        persist_index,
    )

    for seal, name in ((None, "sealed"), (False, "clear")):
        ef = _ef(seal)
        pipe = PrivateIngestionPipeline(transformations=[SentenceSplitter(), PrivateLlamaEmbedding(embedding=ef)],
                                        docstore=SimpleDocumentStore())
        nodes = pipe.run(documents=_li_docs())
        pipe.persist(str(tmp_path / name / "pipeline"))
        index = VectorStoreIndex(nodes, embed_model=PrivateLlamaEmbedding(embedding=ef))
        persist_index(index, tmp_path / name / "index")
        texts = _li_sanitized(ef)
        if seal is None:
            assert all(n.text.startswith("pv-sealed:") for n in nodes)
            assert scan([tmp_path / name], _raw_values(), texts) == []
        else:
            assert scan([tmp_path / name], _raw_values(), texts)  # control: the clear folders keep the text
            assert not [f for f in scan([tmp_path / name], _raw_values()) if "value" in f]


def test_llamaindex_key_holder_retrieves_sanitized_text_and_reopens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter

    from private_vectors.llamaindex import (
        PrivateLlamaEmbedding,
        SanitizeNodes,
        SealedRetriever,
        load_index,
        open_nodes,
        persist_index,
    )

    ef = _ef()
    nodes = SanitizeNodes(embedding=ef)(SentenceSplitter()(_li_docs()))  # sealed: embedded and sealed here
    assert all(n.embedding is not None and n.text.startswith("pv-sealed:") for n in nodes)
    index = VectorStoreIndex(nodes, embed_model=PrivateLlamaEmbedding(embedding=ef))
    query = "Who takes the early train to work in Berlin?"
    hits = SealedRetriever(index, ef, similarity_top_k=2).retrieve(query)
    assert hits[0].node.get_content() == ef.sanitize_documents([DOCS[0]])[0]
    assert hits[0].node.metadata["author"] == "<PERSON>" and SEALED_KEY not in hits[0].node.metadata
    assert hits[0].score >= hits[1].score
    plain = index.as_retriever(similarity_top_k=1).retrieve(query)  # LlamaIndex's own: the markers
    assert plain[0].node.get_content().startswith("pv-sealed:")
    assert open_nodes(ef, plain)[0].node.get_content() in ef.sanitize_documents(DOCS)  # opened for the key holder
    persist_index(index, tmp_path / "index")
    with pytest.raises(SealedStoreError, match=r"^key: "):
        load_index(tmp_path / "index")
    monkeypatch.setenv(KEY_ENV, KEY)
    again = load_index(tmp_path / "index")
    got = SealedRetriever(again, again._embed_model.embedding, similarity_top_k=1).retrieve("unpaid invoice printer")
    assert got[0].node.get_content().startswith("<PERSON> phoned about the unpaid invoice")


def test_llamaindex_own_retriever_over_a_sealed_chroma_collection_reads_the_sanitized_text(tmp_path: Path) -> None:
    """Over Chroma (chroma_vector_store / index_from_collection) the store's query re-ranks K
    noisy candidates by their exact vectors and opens them: LlamaIndex's own retriever and a
    reopened collection read the sanitized text, never the markers (SealedRetriever reads the
    same). The keyed query index is written beside the collection, each record keeps its
    document's entries, and delete_ref_doc drops (and writes) those no other record holds."""
    pytest.importorskip("llama_index.vector_stores.chroma")
    import chromadb
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter

    from private_vectors.chroma import create_collection, open_collection, query_index_collection_name
    from private_vectors.llamaindex import (
        PrivateLlamaEmbedding,
        SanitizeNodes,
        SealedRetriever,
        chroma_vector_store,
        index_from_collection,
    )
    from private_vectors.sealed.stores import sealer_of

    ef = _ef()
    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    col = create_collection(client, "llama", ef)
    storage = StorageContext.from_defaults(vector_store=chroma_vector_store(col))
    index = VectorStoreIndex(SanitizeNodes(embedding=ef)(SentenceSplitter()(_li_docs())), storage_context=storage,
                             embed_model=PrivateLlamaEmbedding(embedding=ef))
    sanitized = ef.sanitize_documents(DOCS)
    hits = index.as_retriever(similarity_top_k=2).retrieve("Who takes the early train to work in Berlin?")
    assert [h.node.get_content() for h in hits][0] == sanitized[0]
    assert all(h.node.get_content() in sanitized for h in hits) and hits[0].score >= hits[1].score
    assert hits[0].node.metadata["author"] == "<PERSON>" and SEALED_KEY not in hits[0].node.metadata
    assert scan([tmp_path / "db"], _raw_values(), _li_sanitized(ef)) == []  # still nothing readable on disk
    again = open_collection(chromadb.PersistentClient(path=str(tmp_path / "db")), "llama", key=KEY)
    got = index_from_collection(again).as_retriever(similarity_top_k=1).retrieve("unpaid invoice printer repair")
    assert got[0].node.get_content() == sanitized[1]
    both = SealedRetriever(index, ef, similarity_top_k=2).retrieve("Who takes the early train to work in Berlin?")
    assert [(h.node.get_content(), round(h.score, 6)) for h in both] == [(h.node.get_content(), round(h.score, 6))
                                                                          for h in hits]  # the same read
    raw = col.get(include=["documents"])["documents"]  # Chroma's own read: the markers
    assert all(d.startswith("pv-sealed:") for d in raw)
    rows = col.get(include=["metadatas"])
    opened = sealer_of(ef).open_many(rows["ids"], [m[SEALED_KEY] for m in rows["metadatas"]])
    refs = {m["document_id"]: set(p.index_refs) for m, p in zip(rows["metadatas"], opened, strict=True)}
    only_jose = refs["d-jose"] - set().union(*(r for d, r in refs.items() if d != "d-jose"))
    held = ef.sanitizer.index.entries_view
    assert only_jose and only_jose <= set(held)

    def written() -> int:  # entries in the keyed query index Chroma keeps beside the collection
        return client.get_collection(query_index_collection_name(col)).count()

    assert written() == len(held)
    index.delete_ref_doc("d-jose")  # LlamaIndex's delete: rows, records and the entries only it held
    assert "d-jose" not in {m["document_id"] for m in col.get(include=["metadatas"])["metadatas"]}
    assert not only_jose & set(held) and refs["d-maria"] <= set(held)
    assert written() == len(held)  # the removals written too


def test_llamaindex_sealed_cache_opens_on_a_hit_and_refuses_unsealed_indexing(tmp_path: Path) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter

    from private_vectors.llamaindex import PrivateIngestionPipeline, PrivateLlamaEmbedding

    ef = _ef()
    pipe = PrivateIngestionPipeline(transformations=[SentenceSplitter(), PrivateLlamaEmbedding(embedding=ef)])
    first = pipe.run(documents=_li_docs())
    pipe.persist(str(tmp_path / "p"))
    ef2 = _ef()
    again = PrivateIngestionPipeline(transformations=[SentenceSplitter(), PrivateLlamaEmbedding(embedding=ef2)])
    again.load(str(tmp_path / "p"))  # a new function adopts the recorded data key: the cache opens
    second = again.run(documents=_li_docs())
    assert [n.text for n in second] == [n.text for n in first]  # sealed nodes from the cache
    assert [n.embedding for n in second] == [n.embedding for n in first]
    with pytest.raises(SealedStoreError, match=r"^key: .*SanitizeNodes"):
        VectorStoreIndex.from_documents(_li_docs(), embed_model=PrivateLlamaEmbedding(embedding=ef))


def test_llamaindex_unsealed_folders_open_as_before(tmp_path: Path) -> None:
    pytest.importorskip("llama_index.core")
    import json

    from llama_index.core import VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter

    from private_vectors.integrations.llamaindex import CONFIG_FILE
    from private_vectors.llamaindex import (
        PrivateLlamaEmbedding,
        SanitizeNodes,
        load_index,
        persist_index,
    )

    ef = _ef(seal=False)
    nodes = SanitizeNodes(embedding=ef)(SentenceSplitter()(_li_docs()))
    persist_index(VectorStoreIndex(nodes, embed_model=PrivateLlamaEmbedding(embedding=ef)), tmp_path / "i")
    side = tmp_path / "i" / CONFIG_FILE
    record = json.loads(side.read_text())
    del record["embedding"]["seal"]  # persisted before sealing existed
    side.write_text(json.dumps(record))
    index = load_index(tmp_path / "i", key=KEY)
    got = index.as_retriever(similarity_top_k=1).retrieve("unpaid invoice printer repair")
    assert got[0].node.get_content().startswith("<PERSON> phoned")


# -- Ray: ProtectDocuments rows and the Parquet / FAISS-shard sinks (called directly: no cluster) ---
def _ray_rows(config: dict, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    import json

    from private_vectors.integrations.ray import ProtectDocuments, SecretRef

    monkeypatch.setenv("PV_SEALED_PATHS_KEY", KEY)  # the worker reads the key itself
    worker = ProtectDocuments(config, SecretRef(env="PV_SEALED_PATHS_KEY"), metadata_column="meta")
    batch = {"id": np.array(IDS, dtype=object), "text": np.array(DOCS, dtype=object),
             "meta": np.array([json.dumps(m) if m else "" for m in METAS], dtype=object)}
    return worker(batch)


def _ray_write(rows: dict[str, Any], folder: Path) -> None:
    import pyarrow as pa

    from private_vectors.integrations.ray import FaissShardDatasink, ParquetDatasink

    table = pa.table({"id": list(rows["id"]), "document": list(rows["document"]), "metadata": list(rows["metadata"]),
                      "embedding": [list(map(float, v)) for v in rows["embedding"]], "pv_index": list(rows["pv_index"])})
    for sink in (ParquetDatasink(folder / "pq"), FaissShardDatasink(folder / "shards")):
        sink.on_write_start()
        sink.write([table], None)


def test_ray_sealed_rows_hold_no_text_and_a_retry_writes_the_same_bytes(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    from private_vectors.integrations.ray_sealed import open_rows

    ef = _ef()
    rows = _ray_rows(ef.get_config(), monkeypatch)
    retry = _ray_rows(ef.get_config(), monkeypatch)  # another actor, the same batch (a retried task)
    for column in ("id", "document", "metadata"):
        assert list(rows[column]) == list(retry[column])  # AES-GCM-SIV: equal input, equal bytes
    np.testing.assert_array_equal(rows["embedding"], retry["embedding"])
    assert all(d.startswith("pv-sealed:") for d in rows["document"])
    _ray_write(rows, tmp_path / "sealed")
    _ray_write(retry, tmp_path / "sealed")  # the retry rewrites the same files
    assert len(list((tmp_path / "sealed" / "pq").glob("part-*.parquet"))) == 1
    texts = _sanitized(ef)
    assert scan([tmp_path / "sealed"], _raw_values(), texts) == []
    clear = _ray_rows(_ef(seal=False).get_config(), monkeypatch)
    _ray_write(clear, tmp_path / "clear")
    assert scan([tmp_path / "clear"], _raw_values(), texts)  # control: clear rows keep the sanitized text
    opened = open_rows(ef, list(rows["id"]), list(rows["metadata"]))
    assert [p.text for p in opened] == ef.sanitize_documents(DOCS)
    assert opened[0].metadata["author"] == "<PERSON>" and opened[0].restore.startswith("pvr1.")
    _, _, exact = ef.pipeline.embed_documents(DOCS, exact=True)
    np.testing.assert_allclose(np.stack([p.vector for p in opened]), exact, atol=2e-3)  # float16 exact vectors
    with pytest.raises(SealedStoreError, match=r"^key: "):
        open_rows(_ef(key=None), list(rows["id"]), list(rows["metadata"]))


def test_ray_two_step_job_seals_each_documents_query_index_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job in two steps (DetectDocuments, then ProtectDocuments against the frozen job index):
    each sealed record lists the entries of the index the sink writes at the job's end that its
    document's replacements made, so deleting it can drop them; a document without a name none."""
    pytest.importorskip("ray")
    import json

    from private_vectors.integrations.ray import DetectDocuments, ProtectDocuments, SecretRef
    from private_vectors.integrations.ray_sealed import open_rows
    from private_vectors.integrations.ray_stages import FACTS_COLUMN, job_index_changes
    from private_vectors.text.job_index import JobFacts, JobIndex

    ef = _ef()
    monkeypatch.setenv("PV_SEALED_PATHS_KEY", KEY)
    secret = SecretRef(env="PV_SEALED_PATHS_KEY")
    detected = DetectDocuments(ef.get_config(), secret)({"id": np.array(IDS, dtype=object),
                                                         "text": np.array(DOCS, dtype=object)})
    job = JobIndex.freeze(JobFacts.merged(json.loads(v) for v in detected[FACTS_COLUMN] if v))
    rows = ProtectDocuments(ef.get_config(), secret, job=job.to_json())(detected)
    written = job_index_changes([json.loads(v) for v in rows["pv_index"] if v], job)
    refs = {p.doc_id: set(p.index_refs) for p in open_rows(ef, list(rows["id"]), list(rows["metadata"]))}
    assert refs["d-maria"] and refs["d-jose"] and refs["d-zoe"]  # each names a person
    assert not refs["d-train"]  # no replacement, no entry
    assert set().union(*refs.values()) <= {m for m, v in written.items() if v is not None}


# -- the audit recognises sealed FAISS folders --------------------------------------------------------
def test_audit_of_sealed_faiss_folders_reads_no_text_and_opens_the_records(tmp_path: Path) -> None:
    pytest.importorskip("presidio_analyzer")
    pytest.importorskip("langchain_community")
    from private_vectors.eval.audit import audit
    from private_vectors.integrations.faiss import PrivateFaissIndex
    from private_vectors.langchain import FAISS

    people = ["Maria Lopez", "Anna Weber", "Peter Novak", "Lisa Chen", "Tom Becker", "Karl Huber", "Eva Klein",
              "Jonas Berg", "Ida Moreau", "Omar Haddad", "Rita Kowalski", "Zoë Ångström"]
    raw = {str(i): f"{n} lives in Berlin and phoned about invoice {4400 + i}." for i, n in enumerate(people)}
    index = PrivateFaissIndex(_ef())
    index.add_texts(list(raw.values()))  # integer ids 0..11, audited as "0".."11"
    index.save(tmp_path / "faiss")
    FAISS.from_texts(list(raw.values()), _ef(), ids=list(raw)).save_local(str(tmp_path / "lc"))
    for folder, kind in ((tmp_path / "faiss", "faiss"), (tmp_path / "lc", "langchain-faiss")):
        rep = audit(folder, raw, key=KEY, kind=kind, attackers={"prior": {}}, clean_baseline=False, progress=False)
        assert rep["sealed"]["records"] == rep["sealed"]["markers"] == len(raw), kind
        assert rep["residual_pii"]["documents_with_text"] == 0, kind  # a copy without the key: markers only
        assert rep["sealed_content"]["documents_with_text"] == len(raw), kind  # the key holder's records
        assert rep["retrieval"]["key_holder"] and rep["retrieval"]["ndcg@10"] >= rep["retrieval"]["ndcg@10_noisy"]


def test_llamaindex_delete_over_its_own_stores_drops_the_query_index_entries() -> None:
    """Over LlamaIndex's default stores (nodes in the docstore) ``index.delete_ref_doc`` leaves
    the deleted document's keyed query-index entries; private_vectors.llamaindex.delete_ref_doc
    removes the rows and the entries no remaining node holds, and keeps the others."""
    pytest.importorskip("llama_index.core")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter

    from private_vectors.llamaindex import PrivateLlamaEmbedding, SanitizeNodes, delete_ref_doc
    from private_vectors.sealed.stores import sealer_of

    def build() -> tuple[PrivateEmbedding, Any]:
        ef = _ef()
        return ef, VectorStoreIndex(SanitizeNodes(embedding=ef)(SentenceSplitter()(_li_docs())),
                                    embed_model=PrivateLlamaEmbedding(embedding=ef))

    ef, index = build()
    nodes = list(index.docstore.docs.values())
    opened = sealer_of(ef).open_many([n.node_id for n in nodes], [n.metadata[SEALED_KEY] for n in nodes])
    refs = {n.ref_doc_id: set(p.index_refs) for n, p in zip(nodes, opened, strict=True)}
    only_jose = refs["d-jose"] - set().union(*(r for d, r in refs.items() if d != "d-jose"))
    assert only_jose and only_jose <= set(ef.sanitizer.index.entries_view)
    index.delete_ref_doc("d-jose", delete_from_docstore=True)  # LlamaIndex's own delete keeps them
    assert only_jose <= set(ef.sanitizer.index.entries_view)

    ef, index = build()
    assert delete_ref_doc(index, "d-jose", ef) == len(only_jose)
    held = set(ef.sanitizer.index.entries_view)
    assert not only_jose & held and refs["d-maria"] <= held
    assert "d-jose" not in {n.ref_doc_id for n in index.docstore.docs.values()}
    with pytest.raises(SealedStoreError, match="key"):
        delete_ref_doc(index, "d-maria", _ef(key=None))
