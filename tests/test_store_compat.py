"""Stores written by version 0.1.0 reopen with today's API and answer the same query.

The fixtures in ``tests/data/stores-0.1.0/`` were written once by 0.1.0 (see its
``make_stores.py``); each test copies one to a temporary folder (the fixture is never
modified), reopens it, runs the recorded query and compares the ids with ``expected.json``.
Queries are embedded clean, so the ranking depends only on the stored vectors: the top-1 must
match for every store, and the top-3 for the keyed store.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from private_vectors import PrivateEmbedding
from private_vectors.errors import ConfigMismatchError
from private_vectors.keys import KEY_ENV

FIXTURES = Path(__file__).parent / "data" / "stores-0.1.0"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
KEY = "fixture-key-0123456789abcdef"  # the test key make_stores.py wrote the keyed store with
RAW_NAMES = ("Maria Lopez", "John Smith", "Anna Weber", "Peter Novak", "Lisa Chen", "Tom Becker")


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    return target


def _check(name: str, got: list[str]) -> None:
    want = EXPECTED["stores"][name]["top3"]
    assert got[0] == want[0], f"{name}: top-1 {got[0]!r}, 0.1.0 answered {want[0]!r}"


def _no_raw_names(texts: list[str | None]) -> None:
    joined = " ".join(t or "" for t in texts)
    assert not [n for n in RAW_NAMES if n in joined]


def _chroma_top3(col, name: str) -> list[str]:
    return list(col.query(query_texts=[EXPECTED["stores"][name]["query"]], n_results=3)["ids"][0])


def test_fixture_is_small_and_from_0_1_0():
    size = sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file())
    assert size < 2_000_000
    assert EXPECTED["library_version"] == "0.1.0"
    assert set(EXPECTED["stores"]) == {"chroma-redact", "chroma-surrogate-keyed", "langchain", "faiss"}


def test_native_chroma_redact_reopens(tmp_path):
    chromadb = pytest.importorskip("chromadb")
    from private_vectors.integrations.chroma import add_documents, open_collection

    client = chromadb.PersistentClient(path=str(_copy("chroma-redact", tmp_path)))
    col = open_collection(client, EXPECTED["collection"])  # the stored PrivateEmbedding is rebuilt
    _check("chroma-redact", _chroma_top3(col, "chroma-redact"))
    stored = col.get(ids=EXPECTED["ids"])["documents"]
    assert len(stored) == len(EXPECTED["ids"])
    _no_raw_names(stored)
    # the next write goes through the rebuilt function
    added = add_documents(col, ids=["doc-new"], documents=["Karl Huber repaired the office printer."])
    assert col.count() == len(EXPECTED["ids"]) + 1
    _no_raw_names(added)
    # the new document's noise is fresh (unkeyed) and may rank anywhere: rank the old ones
    old = [i for i in col.query(query_texts=[EXPECTED["stores"]["chroma-redact"]["query"]], n_results=4)["ids"][0]
           if i != "doc-new"]
    _check("chroma-redact", old)


def test_native_chroma_keyed_surrogate_reopens(tmp_path, monkeypatch):
    chromadb = pytest.importorskip("chromadb")
    from private_vectors.integrations.chroma import open_collection

    monkeypatch.setenv(KEY_ENV, KEY)
    client = chromadb.PersistentClient(path=str(_copy("chroma-surrogate-keyed", tmp_path)))
    col = open_collection(client, EXPECTED["collection"])
    got = _chroma_top3(col, "chroma-surrogate-keyed")
    _check("chroma-surrogate-keyed", got)
    assert got == EXPECTED["stores"]["chroma-surrogate-keyed"]["top3"]
    _no_raw_names(col.get(ids=EXPECTED["ids"])["documents"])


@pytest.mark.parametrize("key", [None, "another-fixture-key-98765xyz"])
def test_native_chroma_keyed_refuses_a_missing_or_wrong_key(tmp_path, monkeypatch, key):
    chromadb = pytest.importorskip("chromadb")
    from private_vectors.errors import ConfigMismatchError
    from private_vectors.integrations.chroma import open_collection

    if key is not None:
        monkeypatch.setenv(KEY_ENV, key)
    client = chromadb.PersistentClient(path=str(_copy("chroma-surrogate-keyed", tmp_path)))
    with pytest.raises(ConfigMismatchError, match="key") as info:
        open_collection(client, EXPECTED["collection"])
    assert KEY not in str(info.value) and (key is None or key not in str(info.value))


def test_native_chroma_reopens_with_todays_default_line(tmp_path):
    chromadb = pytest.importorskip("chromadb")
    from private_vectors.integrations.chroma import open_collection

    client = chromadb.PersistentClient(path=str(_copy("chroma-redact", tmp_path)))
    with pytest.raises(ConfigMismatchError, match="detector: stored 'rules', given 'model'"):
        open_collection(client, EXPECTED["collection"], embedding=PrivateEmbedding(concept="PII", eps=10))
    ef = PrivateEmbedding(concept="PII", eps=10, detector="rules")  # the store's detector, as the error says
    col = open_collection(client, EXPECTED["collection"], embedding=ef)
    _check("chroma-redact", _chroma_top3(col, "chroma-redact"))
    from private_vectors.integrations.chroma import (
        add_documents,  # the next write upgrades the record
    )

    add_documents(col, ids=["new"], documents=["Ada Quill wrote to the council."])
    stored = chromadb.PersistentClient(path=str(tmp_path / "chroma-redact")).get_collection(EXPECTED["collection"])
    assert stored.configuration_json["embedding_function"]["config"]["sanitizer"]["version"] == \
        ef.sanitizer.get_config()["version"]


def test_langchain_dropin_reopens(tmp_path):
    pytest.importorskip("langchain_chroma")
    from private_vectors.langchain import Chroma

    store = Chroma(collection_name=EXPECTED["collection"], persist_directory=str(_copy("langchain", tmp_path)))
    assert isinstance(store.embeddings, PrivateEmbedding)  # rebuilt from the collection's config
    docs = store.similarity_search(EXPECTED["stores"]["langchain"]["query"], k=3)
    _check("langchain", [d.id for d in docs])
    _no_raw_names([d.page_content for d in docs])


def test_faiss_index_reopens(tmp_path):
    pytest.importorskip("faiss")
    from private_vectors.integrations.faiss import PrivateFaissIndex

    index = PrivateFaissIndex.load(_copy("faiss", tmp_path))
    assert len(index) == len(EXPECTED["ids"])
    hits = index.search_texts(EXPECTED["stores"]["faiss"]["query"], k=3)
    _check("faiss", [EXPECTED["ids"][i] for i, _, _ in hits])
    _no_raw_names([t for _, _, t in hits])
    index.add_texts(["Karl Huber repaired the office printer."])
    index.save(tmp_path / "faiss")
    again = PrivateFaissIndex.load(tmp_path / "faiss")
    assert len(again) == len(EXPECTED["ids"]) + 1
    # the new document's noise is fresh (unkeyed) and may rank anywhere: rank the old ones
    old = [i for i, _, _ in again.search_texts(EXPECTED["stores"]["faiss"]["query"], k=4) if i < len(EXPECTED["ids"])]
    assert old[0] == hits[0][0]


def test_todays_line_on_a_keyed_0_1_0_store_reproduces_its_noise(tmp_path, monkeypatch):
    """0.1.0 recorded a noise concept for ``concept="PII"`` beside Laplace noise, and keyed noise
    depends on it. Today's ``PrivateEmbedding(concept="PII", ...)`` has none; bound to that store
    it adopts the recorded reference, so a re-ingested document gets the vector it got then
    (an attacker could otherwise average two copies)."""
    chromadb = pytest.importorskip("chromadb")
    import numpy as np

    from private_vectors.integrations.chroma import open_collection

    text, doc_id = "Our support team answers tickets within two business days.", "doc-09"  # nothing to replace
    client = chromadb.PersistentClient(path=str(_copy("chroma-surrogate-keyed", tmp_path)))
    monkeypatch.setenv(KEY_ENV, KEY)  # Chroma rebuilds the stored function to show its config
    stored_config = client.get_collection(EXPECTED["collection"]).configuration_json["embedding_function"]["config"]
    monkeypatch.delenv(KEY_ENV)
    ef = PrivateEmbedding(concept="PII", eps=10, sanitize="surrogate", key=KEY, detector="rules")  # 0.1.0's detector
    assert ef.get_config()["concept"] is None  # no noise concept of its own
    col = open_collection(client, EXPECTED["collection"], embedding=ef)
    assert ef.get_config()["concept"] == stored_config["concept"] and ef.noise_concept is None
    stored = np.asarray(col.get(ids=[doc_id], include=["embeddings"])["embeddings"][0])
    again = ef.embed_array([text])[0]
    np.testing.assert_allclose(again, stored, atol=1e-4)
    fresh = PrivateEmbedding(concept="PII", eps=10, sanitize="surrogate", key=KEY,
                             detector="rules").embed_array([text])[0]
    assert not np.allclose(fresh, stored, atol=1e-2)  # unbound: today's context, other noise


def _stored_sanitizer_config(name: str, folder) -> dict:
    if name == "faiss":
        return json.loads((folder / "private_vectors.json").read_text())["embedding"]["sanitizer"]
    import chromadb

    col = chromadb.PersistentClient(path=str(folder)).get_collection(EXPECTED["collection"])
    return col.configuration_json["embedding_function"]["config"]["sanitizer"]


@pytest.mark.parametrize("name", ["chroma-redact", "chroma-surrogate-keyed", "langchain", "faiss"])
def test_each_store_takes_a_write_and_records_the_upgrade(tmp_path, monkeypatch, name):
    """A 0.1.0 store opens, takes one write, records today's ruleset and ``upgraded_from``, and
    the new document's entities are replaced."""
    pytest.importorskip("chromadb")
    new_doc = "Karl Huber repaired the office printer in Lisbon."
    folder = _copy(name, tmp_path)
    if name == "chroma-surrogate-keyed":
        monkeypatch.setenv(KEY_ENV, KEY)
    if name == "faiss":
        pytest.importorskip("faiss")
        from private_vectors.integrations.faiss import PrivateFaissIndex

        index = PrivateFaissIndex.load(folder)
        index.add_texts([new_doc])
        index.save(folder)
        written = [index.texts[i] for i in index.texts][-1:]
    elif name == "langchain":
        pytest.importorskip("langchain_chroma")
        from private_vectors.langchain import Chroma

        store = Chroma(collection_name=EXPECTED["collection"], persist_directory=str(folder))
        store.add_texts([new_doc], ids=["new"])
        written = store.get(ids=["new"])["documents"]
    else:
        import chromadb

        from private_vectors.integrations.chroma import add_documents, open_collection

        col = open_collection(chromadb.PersistentClient(path=str(folder)), EXPECTED["collection"])
        add_documents(col, ids=["new"], documents=[new_doc])
        written = col.get(ids=["new"])["documents"]
    assert written and "Karl" not in written[0] and "Huber" not in written[0] and "Lisbon" not in written[0]
    cfg = _stored_sanitizer_config(name, folder)
    today = PrivateEmbedding(concept="PII", eps=10).sanitizer.get_config()
    assert cfg["upgraded_from"] == 2 and cfg["version"] == today["version"] and cfg["rules"] == today["rules"]
