"""Restore records through every store path that exists: Chroma ``add_documents``, the LangChain
drop-in ``Chroma`` and ``PrivateFaissIndex`` (120 generated surrogate documents each, fake encoder):
restored text equals the original, no replaced value in any persisted byte, a wrong key and a
swapped or edited record are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from private_vectors import PrivateEmbedding
from private_vectors.restore import RESTORE_KEY, RestoreError, Restorer, config_digest, restore
from test_restore import KEY, OTHER, generated_documents

N = 120


def _ef(**kw) -> PrivateEmbedding:
    return PrivateEmbedding(model="fake", concept="PII", sanitize="surrogate", key=KEY, eps=10, **kw)


def _clear_ef() -> PrivateEmbedding:
    """A keyed function whose stores keep the sanitized text in clear (the restore records beside it)."""
    return PrivateEmbedding(model="fake", concept="PII", sanitize="surrogate", key=KEY, eps=10, seal=False)


def _persisted_bytes(folder: Path) -> dict[str, bytes]:
    """Every persisted file's bytes by its path under ``folder``."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _replaced_values(restorer: Restorer, ids, stored, records) -> set[str]:
    """Original values of every replaced span (opened with the key), minus those the stored text
    itself still shows (a value the detectors missed elsewhere is no restore-data leak)."""
    shown = "\n".join(stored)
    values = {r.original for i, rec in zip(ids, records, strict=True) for r in restorer.open(i, rec).replacements
              if r.label != "ESCAPE"}
    return {v for v in values if len(v) >= 4 and v not in shown}


def _assert_no_plaintext(files: dict[str, bytes], values: set[str]) -> None:
    assert values, "no replaced values to look for"
    leaked = sorted((v, name, blob.find(v.encode("utf-8")), len(blob)) for v in values
                    for name, blob in files.items() if v.encode("utf-8") in blob)
    assert not leaked, f"{len(leaked)} replaced values in persisted bytes (value, file, offset, size): {leaked[:5]}"


def _wrong_key(ef: PrivateEmbedding) -> Restorer:
    cfg = ef.get_config()
    return Restorer(OTHER, salt=bytes.fromhex(cfg["key_salt"]), context=config_digest(cfg))


def test_chroma_add_documents(tmp_path):
    import chromadb

    from private_vectors.integrations.chroma import add_documents, open_collection

    texts = generated_documents(N, seed=3)
    ids = [f"c{i}" for i in range(N)]
    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    ef = _ef(seal=False)  # the clear store: records under pv_restore (sealed stores: tests/test_sealed_chroma.py)
    col = client.create_collection("notes", embedding_function=ef)
    add_documents(col, ids=ids, documents=texts, metadatas=[{"n": i} for i in range(N)])
    got = col.get(ids=ids, include=["documents", "metadatas"])
    stored, metas = got["documents"], got["metadatas"]
    assert all(RESTORE_KEY in m and m["n"] == i for i, m in enumerate(metas))
    restorer = Restorer.for_embedding(ef)
    back = [restorer.restore_text(i, s, m[RESTORE_KEY]) for i, s, m in zip(got["ids"], stored, metas, strict=True)]
    assert back == [texts[ids.index(i)] for i in got["ids"]]
    values = _replaced_values(restorer, got["ids"], stored, [m[RESTORE_KEY] for m in metas])
    del client, col
    _assert_no_plaintext(_persisted_bytes(tmp_path / "db"), values)

    # reopened in a "new process" (a new PrivateEmbedding with the key): records still open
    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    ef2 = _ef(seal=False)
    col = open_collection(client, "notes", ef2)
    one = col.get(ids=["c5"], include=["documents", "metadatas"])
    assert Restorer.for_embedding(ef2).restore_text("c5", one["documents"][0], one["metadatas"][0][RESTORE_KEY]) \
        == texts[5]
    with pytest.raises(RestoreError):
        _wrong_key(ef2).open("c5", one["metadatas"][0][RESTORE_KEY])
    # a record moved onto another document, or edited in the store, is refused
    rec5 = one["metadatas"][0][RESTORE_KEY]
    col.update(ids=["c6"], metadatas=[{RESTORE_KEY: rec5}])
    six = col.get(ids=["c6"], include=["documents", "metadatas"])
    with pytest.raises(RestoreError, match="another document"):
        Restorer.for_embedding(ef2).restore_text("c6", six["documents"][0], six["metadatas"][0][RESTORE_KEY])
    col.update(ids=["c7"], metadatas=[{RESTORE_KEY: rec5[:-8] + ("A" if rec5[-8] != "A" else "B") + rec5[-7:]}])
    seven = col.get(ids=["c7"], include=["documents", "metadatas"])
    with pytest.raises(RestoreError):
        Restorer.for_embedding(ef2).restore_text("c7", seven["documents"][0], seven["metadatas"][0][RESTORE_KEY])


def test_langchain_chroma(tmp_path):
    from private_vectors.langchain import Chroma

    texts = generated_documents(N, seed=4)
    ids = [f"l{i}" for i in range(N)]
    ef = _ef()
    store = Chroma(collection_name="notes", embedding_function=ef, persist_directory=str(tmp_path / "lc"))
    store.add_texts(texts, ids=ids, metadatas=[{"source": f"s{i}"} for i in range(N)])
    docs = store.get_by_ids(ids)
    assert len(docs) == N and all(RESTORE_KEY in d.metadata for d in docs)
    back = restore(docs, ef)
    by_id = dict(zip(ids, texts, strict=True))
    assert all(d.page_content == by_id[d.id] and RESTORE_KEY not in d.metadata for d in back)
    assert all(d.metadata["source"] == f"s{ids.index(d.id)}" for d in back)
    # retrieval returns documents with their ids and records: restore them directly
    hits = store.similarity_search("Where did the assistant write from?", k=4)
    assert [d.page_content for d in restore(hits, ef)] == [by_id[d.id] for d in hits]
    restorer = Restorer.for_embedding(ef)
    values = _replaced_values(restorer, [d.id for d in docs], [d.page_content for d in docs],
                              [d.metadata[RESTORE_KEY] for d in docs])
    with pytest.raises(RestoreError):
        restore(docs[:1], restorer=_wrong_key(ef))
    swapped = docs[1].model_copy(update={"metadata": {**docs[1].metadata, RESTORE_KEY: docs[0].metadata[RESTORE_KEY]}})
    with pytest.raises(RestoreError):
        restore([swapped], ef)
    # update_documents re-seals the record for the new text
    from langchain_core.documents import Document

    store.update_documents(["l0"], [Document(page_content="Maria Lopez moved to Madrid.", metadata=docs[0].metadata)])
    again = store.get_by_ids(["l0"])
    assert restore(again, ef)[0].page_content == "Maria Lopez moved to Madrid."
    values = {v for v in values if v not in again[0].page_content}  # a surrogate the new text shows is no leak
    del store
    _assert_no_plaintext(_persisted_bytes(tmp_path / "lc"), values)


def test_faiss_index(tmp_path):
    pytest.importorskip("faiss")
    from private_vectors.integrations.faiss import PrivateFaissIndex

    texts = generated_documents(N, seed=5)
    ef = _clear_ef()
    index = PrivateFaissIndex(ef)
    ids = index.add_texts(texts)
    assert len(index.restore_records) == N
    assert index.restore_texts(ids) == texts
    index.save(tmp_path / "fx")
    restorer = Restorer.for_embedding(ef)
    values = _replaced_values(restorer, ids, [index.texts[i] for i in ids], [index.restore_records[i] for i in ids])
    _assert_no_plaintext(_persisted_bytes(tmp_path / "fx"), values)

    loaded = PrivateFaissIndex.load(tmp_path / "fx", _clear_ef())
    assert loaded.restore_texts(ids[:10]) == texts[:10]
    with pytest.raises(RestoreError):
        restore([(ids[0], loaded.texts[ids[0]], loaded.restore_records[ids[0]])], restorer=_wrong_key(ef))
    loaded.restore_records[ids[1]] = loaded.restore_records[ids[2]]  # a swapped record
    with pytest.raises(RestoreError):
        loaded.restore_texts([ids[1]])


def test_raw_text_paths_keep_no_records(tmp_path):
    from private_vectors.langchain import Chroma

    ef = _clear_ef()  # the clear store (a sealed one seals the raw text too)
    store = Chroma(collection_name="raw", embedding_function=ef, persist_directory=str(tmp_path / "raw"),
                   store_raw_text=True)
    store.add_texts(["Amelia Okafor flew to Lagos."], ids=["r"])
    got = store._collection.get(ids=["r"], include=["documents", "metadatas"])
    assert got["documents"] == ["Amelia Okafor flew to Lagos."] and not (got["metadatas"][0] or {})
    del store
    with pytest.raises(AssertionError, match="replaced values in persisted bytes"):  # the check bites
        _assert_no_plaintext(_persisted_bytes(tmp_path / "raw"), {"Amelia Okafor"})
