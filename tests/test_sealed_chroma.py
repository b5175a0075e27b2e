"""Sealed Chroma collections (a key): nothing readable on disk but noisy vectors, ids, markers and
records; the key holder's query/get re-rank and open; no key, a sealed filter or a document filter
is refused; reopen (sealed and written before sealing); delete shreds (fake encoder, tiny texts)."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from _byte_scan import scan
from private_vectors import PrivateEmbedding
from private_vectors.errors import InvalidParameterError, SealedRecordError, SealedStoreError
from private_vectors.keys import KEY_ENV
from private_vectors.sealed import Sealer, Sealing
from private_vectors.sealed.rerank import exact_distances
from private_vectors.text import Sanitizer
from private_vectors.text.recognizers.names import NameDetector
from private_vectors.text.recognizers.regex import RegexDetector

chromadb = pytest.importorskip("chromadb")
from private_vectors.chroma import (  # noqa: E402
    add_documents,
    create_collection,
    delete,
    get,
    open_collection,
    query,
    query_index_collection_name,
)

KEY = "sealed-chroma-key-Vb6nQ2rT8w"
FIXTURE = Path(__file__).parent / "data" / "keys_main_chroma"
DOCS = {"a": "Amelia Okafor flew to Lagos on Monday for the quarterly review.",
        "b": "Write to amelia.okafor@example.com about the unpaid invoice from March.",
        "c": "Søren Łukasiewicz-Müller met Tomas Berger in the harbour office.",
        "d": "Okafor signed."}  # under four words
METAS = [{"author": "Amelia Okafor", "year": 2021}, {"year": 2022}, {"author": "Tomas Berger", "year": 2021}, None]
RAW_VALUES = ["Amelia", "Okafor", "amelia.okafor@example.com", "Lagos", "Søren", "Łukasiewicz", "Müller", "Berger",
              "quarterly review", "unpaid invoice", "harbour office"]


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    warnings.simplefilter("ignore", DeprecationWarning)


def _ef(key: str | None = KEY, **kw) -> PrivateEmbedding:
    san = Sanitizer("PII", policy="redact", key=key, detectors=[RegexDetector(), NameDetector()]) if key else None
    return PrivateEmbedding(model="fake:32", eps=10, key=key, sanitize=san, **kw)


def _write(folder: Path, ef: PrivateEmbedding | None = None, name: str = "notes") -> tuple[object, list[str]]:
    col = create_collection(chromadb.PersistentClient(path=str(folder)), name, ef or _ef())
    stored = add_documents(col, ids=list(DOCS), documents=list(DOCS.values()), metadatas=METAS)
    return col, stored


# -- what is on disk ------------------------------------------------------------------------------
def test_no_raw_value_and_no_four_word_run_of_the_sealed_text_on_disk(tmp_path):
    col, stored = _write(tmp_path)
    assert stored is not None and "Amelia" not in stored[0] and len(stored[3].split()) < 4
    names = {p.name for p in tmp_path.rglob("*") if p.is_file()}
    assert "chroma.sqlite3" in names and "data_level0.bin" in names  # the HNSW files are scanned too
    # (a check that the scan finds what it looks for: the same texts in a clear collection)
    clear = tmp_path.parent / (tmp_path.name + "-clear")
    _write(clear, _ef(seal=False))
    assert len(scan([clear], RAW_VALUES, stored)) >= len(stored)
    hits = scan([tmp_path], RAW_VALUES, stored)
    assert not hits, hits[:5]
    raw = col.get(include=["documents", "metadatas"])  # Chroma's own get: markers and records
    assert all(d.startswith("pv-sealed:") for d in raw["documents"])
    assert all(list(m) == ["pv_sealed"] for m in raw["metadatas"])


def test_the_key_holder_reads_what_a_clear_store_returns(tmp_path):
    col, stored = _write(tmp_path)
    got = get(col, ["d", "a"])
    assert got["ids"] == ["d", "a"] and got["documents"] == [stored[3], stored[0]]
    assert got["metadatas"][1]["author"] == "<PERSON>" and got["metadatas"][1]["year"] == 2021
    assert got["metadatas"][1]["pv_restore"].startswith("pvr1.")
    res = query(col, ["who flew to Lagos?", "the invoice"], n_results=2)
    assert res["candidates"] == 4 and len(res["ids"]) == 2 and all(len(r) == 2 for r in res["ids"])
    ef = col._embedding_function
    _, clean = ef.pipeline.embed_queries(["who flew to Lagos?"], exact=True)
    _, _, exact = ef.pipeline.embed_documents([DOCS[i] for i in DOCS], exact=True)
    want = exact_distances(clean[0], exact, "cosine")
    order = np.argsort(want, kind="stable")[:2]
    assert res["ids"][0] == [list(DOCS)[j] for j in order]  # the exact ranking, not the noisy one
    assert np.allclose(res["distances"][0], want[order], atol=2e-3)  # float16 exact vectors
    assert res["documents"][0][0] in stored
    plain = col.query(query_texts=["who flew to Lagos?"], n_results=1)  # no patching: Chroma's own query
    assert plain["documents"][0][0].startswith("pv-sealed:")


def test_hmac_ids_are_stored_and_the_key_holder_gets_the_real_ones(tmp_path):
    col, _ = _write(tmp_path, _ef(seal=Sealing(ids="hmac")))
    stored_ids = col.get(include=[])["ids"]
    assert not set(stored_ids) & set(DOCS) and all(i.startswith("pv-") for i in stored_ids)
    assert sorted(get(col)["ids"]) == sorted(DOCS) and get(col, ["b"])["ids"] == ["b"]
    assert add_documents(col, ids=["e"], documents=["Okafor paid."]) and get(col, ["e"])["ids"] == ["e"]
    assert query(col, ["invoice"], n_results=1)["ids"][0][0] in DOCS


def test_without_the_key_a_sealed_collection_refuses_to_read(tmp_path):
    _write(tmp_path)
    col = chromadb.PersistentClient(path=str(tmp_path)).get_collection("notes")  # no key (a stolen copy)
    for call in (lambda: query(col, ["Lagos"], n_results=1), lambda: get(col, ["a"]), lambda: delete(col, ["a"])):
        with pytest.raises(SealedStoreError, match="key") as info:
            call()
        assert "pvs1." not in str(info.value) and "Okafor" not in str(info.value)
    assert query(col, ["Lagos"], n_results=1, key=KEY)["documents"][0][0].startswith("<PERSON> flew")


def test_filters_on_readable_keys_work_and_sealed_fields_are_refused(tmp_path):
    col, _ = _write(tmp_path, _ef(seal=Sealing(readable_metadata=["year"])))
    assert col.get(ids=["a"], include=["metadatas"])["metadatas"][0]["year"] == 2021  # readable, as declared
    assert "author" not in col.get(ids=["a"], include=["metadatas"])["metadatas"][0]
    res = query(col, ["Lagos"], n_results=3, where={"year": 2021})
    assert sorted(res["ids"][0]) == ["a", "c"]
    assert get(col, where={"$and": [{"year": 2022}, {"year": {"$gte": 2000}}]})["ids"] == ["b"]
    with pytest.raises(InvalidParameterError, match=r"where.*sealed") as info:
        query(col, ["Lagos"], n_results=1, where={"author": "<PERSON>"})
    assert "<PERSON>" not in str(info.value)
    with pytest.raises(InvalidParameterError, match="where_document"):
        query(col, ["Lagos"], n_results=1, where_document={"$contains": "Lagos"})
    with pytest.raises(InvalidParameterError, match="sealed"):
        get(col, where={"$or": [{"year": 2021}, {"pv_sealed": "x"}]})


# -- reopen ---------------------------------------------------------------------------------------
def test_a_sealed_collection_reopens_in_a_new_client_with_the_key(tmp_path):
    _, stored = _write(tmp_path)
    col = open_collection(chromadb.PersistentClient(path=str(tmp_path)), "notes", key=KEY)
    assert query(col, [DOCS["a"]], n_results=1)["documents"][0][0] == stored[0]  # the same text: distance 0
    add_documents(col, ids=["e"], documents=["Amelia Okafor paid."])
    assert get(col, ["e"])["documents"] == ["<PERSON> paid."]
    assert col.get(ids=["e"])["documents"][0].startswith("pv-sealed:")
    with pytest.raises(Exception, match="seal"):  # a function that asks for a clear store is refused
        open_collection(chromadb.PersistentClient(path=str(tmp_path)), "notes", _ef(seal=False))


def test_a_store_written_before_sealing_opens_and_takes_clear_writes(tmp_path):
    folder = tmp_path / "old"
    shutil.copytree(FIXTURE, folder, ignore=shutil.ignore_patterns("*.md", "*.py"))
    key = "fixture-key-Qm7v2Lx9Tb4Wz8Rk"
    col = open_collection(chromadb.PersistentClient(path=str(folder)), "old", key=key)
    assert not col._embedding_function.pipeline.seal.sealed
    add_documents(col, ids=["d2"], documents=["Tomas Berger wrote to Amelia Okafor."])
    doc = col.get(ids=["d2"])["documents"][0]
    assert not doc.startswith("pv-sealed:") and "Okafor" not in doc and "wrote to" in doc
    assert get(col, ["d2"])["documents"] == [doc] and query(col, ["wrote"], n_results=1)["ids"][0]


# -- delete ---------------------------------------------------------------------------------------
def test_delete_removes_the_document_its_index_entries_and_shreds_its_key(tmp_path):
    ring = tmp_path / "keyring.json"
    folder = tmp_path / "db"
    col, _ = _write(folder, _ef(seal=Sealing(keyring=str(ring))))
    side = chromadb.PersistentClient(path=str(folder)).get_collection(query_index_collection_name(col))
    before = set(side.get(include=[])["ids"])
    sealer = Sealer.for_embedding(col._embedding_function)
    refs = {i: set(p.index_refs) for i, p in zip(
        "abcd", sealer.open_many(list("abcd"), [m["pv_sealed"] for m in col.get(ids=list("abcd"))["metadatas"]]),
        strict=True)}
    only_c = refs["c"] - refs["a"] - refs["b"] - refs["d"]
    assert only_c and only_c <= before and refs["a"] & refs["d"]  # "Okafor" is in a and d
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)  # a backup taken before the delete

    assert delete(col, ["c", "a"]) == 2 and col.count() == 2
    assert get(col, ["c", "a"])["ids"] == [] and sorted(get(col)["ids"]) == ["b", "d"]
    after = set(side.get(include=[])["ids"])
    assert not (only_c | (refs["a"] - refs["b"] - refs["d"])) & after  # no remaining document names them
    assert refs["b"] | refs["d"] <= after  # entries another document still refers to stay

    old = open_collection(chromadb.PersistentClient(path=str(copy)), "notes", _ef(seal=Sealing(keyring=str(ring))))
    assert old.count() == 4  # the copy still holds the rows...
    with pytest.raises(SealedRecordError, match="keyring"):  # ...but their keys are gone
        get(old, ["c"])
    assert get(old, ["b"])["ids"] == ["b"]


def test_delete_without_a_keyring_and_on_a_clear_collection(tmp_path):
    col, _ = _write(tmp_path / "sealed")
    assert delete(col, ["a", "zz"]) == 1 and get(col, ["a"])["ids"] == [] and col.count() == 3
    clear, _ = _write(tmp_path / "clear", _ef(seal=False))
    assert delete(clear, ["a"]) == 1 and clear.count() == 3


# -- the LangChain drop-in --------------------------------------------------------------------------
def _lc_store(folder: Path, ef: PrivateEmbedding | None = None, name: str = "lcnotes"):
    from private_vectors.langchain import Chroma

    return Chroma(collection_name=name, persist_directory=str(folder), embedding_function=ef or _ef())


def _lc_write(folder: Path, ef: PrivateEmbedding | None = None):
    store = _lc_store(folder, ef)
    store.add_texts(list(DOCS.values()), metadatas=METAS, ids=list(DOCS))
    return store


def test_langchain_writes_sealed_rows_and_searches_as_the_key_holder(tmp_path):
    from private_vectors.langchain import Chroma

    store = _lc_write(tmp_path)
    raw = store.get(include=["documents", "metadatas"])  # langchain_chroma's get: what is stored
    assert all(d.startswith("pv-sealed:") for d in raw["documents"]) and all(list(m) == ["pv_sealed"]
                                                                               for m in raw["metadatas"])
    store = Chroma(collection_name="lcnotes", persist_directory=str(tmp_path), key=KEY)  # reopened with the key
    held = [d.page_content for d in store.get_by_ids(list(DOCS))]
    assert len(held) == 4 and not scan([tmp_path], RAW_VALUES, held)  # no raw value, no 4-word run on disk
    hits = store.similarity_search_with_score(DOCS["a"], k=2)
    assert hits[0][0].id == "a" and hits[0][0].page_content.startswith("<PERSON> flew to Lagos")
    assert hits[0][1] == pytest.approx(0.0, abs=2e-3) and hits[0][1] <= hits[1][1]  # exact distances
    assert hits[0][0].metadata["author"] == "<PERSON>" and hits[0][0].metadata["pv_restore"].startswith("pvr1.")
    scored = store.similarity_search_with_relevance_scores(DOCS["a"], k=4, score_threshold=0.99)
    assert [d.id for d, _ in scored] == ["a"]  # the threshold applies to the re-ranked, exact relevance
    docs = store.as_retriever(search_kwargs={"k": 2}).invoke(DOCS["c"])
    assert docs[0].id == "c" and not any(d.page_content.startswith("pv-") for d in docs)
    assert [d.id for d in store.get_by_ids(["d", "zz", "b"])] == ["d", "b"]
    by_vector = store.similarity_search_by_vector(list(store.embeddings.embed_query("invoice")), k=4)
    assert sorted(d.id for d in by_vector) == sorted(DOCS) and all(not d.page_content.startswith("pv-")
                                                                   for d in by_vector)
    with pytest.raises(InvalidParameterError, match="where"):
        store.similarity_search("Lagos", k=1, filter={"author": "<PERSON>"})


def test_langchain_mmr_runs_on_the_exact_vectors(tmp_path):
    from private_vectors.sealed.rerank import mmr

    store = _lc_write(tmp_path)
    store.add_texts([DOCS["a"]], ids=["a2"])  # a duplicate: MMR must skip it
    got = store.max_marginal_relevance_search(DOCS["a"], k=2, fetch_k=5, lambda_mult=0.5)
    ef = store.embeddings
    _, clean = ef.pipeline.embed_queries([DOCS["a"]], exact=True)
    ids = ["a", "b", "c", "d", "a2"]
    _, _, exact = ef.pipeline.embed_documents([DOCS.get(i, DOCS["a"]) for i in ids], exact=True)
    want = [ids[j] for j in mmr(clean[0], exact, 2, 0.5)]
    assert [d.id for d in got] == want and len({d.page_content for d in got}) == 2
    with pytest.raises(InvalidParameterError, match="embedding"):
        store.max_marginal_relevance_search_by_vector(list(ef.embed_query("x")), k=1)


def test_langchain_without_the_key_refuses_and_shows_no_record(tmp_path):
    from private_vectors.langchain import Chroma

    _lc_write(tmp_path)
    with pytest.raises(SealedStoreError, match="key") as info:
        Chroma(collection_name="lcnotes", persist_directory=str(tmp_path))
    assert "pvs1." not in str(info.value)


def test_langchain_delete_and_update(tmp_path):
    store = _lc_write(tmp_path, _ef(seal=Sealing(keyring=str(tmp_path / "ring.json"), ids="hmac")))
    with pytest.warns(UserWarning, match="already in the collection"):  # the keyed id is found
        store.add_texts(["Okafor left."], ids=["d"])
    store.delete(["a"])
    assert store.get_by_ids(["a"]) == [] and store._collection.count() == 3
    from langchain_core.documents import Document

    store.update_documents(["b"], [Document(page_content="Tomas Berger paid.", metadata={"year": 2023})])
    (doc,) = store.get_by_ids(["b"])
    assert doc.page_content == "<PERSON> paid." and doc.metadata["year"] == 2023
    with pytest.raises(InvalidParameterError, match="ids"):
        store.delete(where={"year": 2023})


def test_parent_documents_are_sealed_and_opened_for_the_key_holder(tmp_path):
    from langchain_classic.storage import InMemoryStore
    from langchain_core.documents import Document
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from private_vectors.integrations.langchain_records import open_parents
    from private_vectors.langchain import ParentDocumentRetriever
    from private_vectors.restore import restore

    ef = _ef()
    docstore = InMemoryStore()
    retriever = ParentDocumentRetriever(vectorstore=_lc_store(tmp_path, ef), docstore=docstore,
                                       child_splitter=RecursiveCharacterTextSplitter(chunk_size=30, chunk_overlap=0))
    retriever.add_documents([Document(page_content=DOCS["a"], metadata=METAS[0]),
                             Document(page_content=DOCS["c"], metadata=METAS[2])])
    parents = docstore.mget(list(docstore.yield_keys()))
    assert all(p.page_content.startswith("pv-sealed:") and list(p.metadata) == ["pv_sealed"] for p in parents)
    found = retriever.invoke(DOCS["a"])
    assert found and found[0].page_content.startswith("<PERSON> flew to Lagos")
    assert sorted(restore(open_parents(ef, parents), ef)[i].page_content for i in range(2)) == sorted(
        [DOCS["a"], DOCS["c"]])
    with pytest.raises(SealedStoreError, match="key"):
        open_parents(_ef(key=None), parents)


def test_index_cleanup_deletes_sealed_records(tmp_path):
    from langchain_classic.indexes import SQLRecordManager
    from langchain_core.documents import Document

    from private_vectors.langchain import index

    records = SQLRecordManager("chroma/sealed", db_url=f"sqlite:///{tmp_path / 'records.sqlite'}")
    records.create_schema()
    store = _lc_store(tmp_path / "c", _ef(seal=Sealing(keyring=str(tmp_path / "ring.json"))))
    docs = [Document(page_content=t, metadata={"source": s}) for t, s in zip(list(DOCS.values())[:3], "xyz",
                                                                             strict=True)]
    assert index(docs, records, store, cleanup="full", source_id_key="source")["num_added"] == 3
    kept = index(docs[1:], records, store, cleanup="full", source_id_key="source")
    assert kept["num_deleted"] == 1 and store._collection.count() == 2
    assert set(store.get()["ids"]) == set(records.list_keys())
    assert all(d.page_content.startswith(("Write to", "<PERSON> met")) for d in store.similarity_search("x", k=4))


def test_a_query_sizes_k_from_a_recent_count_and_still_finds_documents_added_since(tmp_path, monkeypatch):
    from private_vectors.integrations import chroma_sealed

    col, _ = _write(tmp_path)
    calls = []
    real = type(col).count
    monkeypatch.setattr(type(col), "count", lambda self: calls.append(1) or real(self))
    chroma_sealed._sizes.clear()
    assert len(query(col, ["who flew to Lagos?"], n_results=4)["ids"][0]) == 4 and len(calls) == 1
    add_documents(col, ids=["e", "f"], documents=["Berger wrote the harbour memo.", "An invoice was paid in June."])
    res = query(col, ["the harbour memo"], n_results=6)  # the held count (4) is not asked again, nor does it cap K
    assert len(calls) == 1 and res["candidates"] >= 200 and sorted(res["ids"][0]) == ["a", "b", "c", "d", "e", "f"]
    monkeypatch.setattr(chroma_sealed, "SIZE_SECONDS", 0.0)
    query(col, ["the harbour memo"], n_results=2)
    assert len(calls) == 2
