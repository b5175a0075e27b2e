"""The drop-in ``private_vectors.langchain.Chroma``: same constructor as ``langchain_chroma.Chroma``,
config recorded in the collection (drift and key checks on reopen), the function's space, no raw
text unless asked; and Chroma's own embedding-function schema tests on the registered function."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import _zygote

langchain_chroma = pytest.importorskip("langchain_chroma")
chromadb = pytest.importorskip("chromadb")

from langchain_core.documents import Document  # noqa: E402

import private_vectors  # noqa: E402
from private_vectors import PrivateEmbedding  # noqa: E402
from private_vectors.embedding import KEY_ENV  # noqa: E402
from private_vectors.errors import ConfigMismatchError, InvalidParameterError, InvalidTypeError  # noqa: E402
from private_vectors.integrations import langchain as lc_mod  # noqa: E402
from private_vectors.langchain import Chroma, stored_texts  # noqa: E402

DOCS = ["Maria Lopez flew to Madrid on Monday", "the patient had a cough and fever",
        "quarterly revenue grew by twelve percent", "the trail closes after snowfall"]


class HookEmbedding:
    """A non-PrivateEmbedding LangChain embedding with the ``texts_to_store`` hook."""

    def embed_documents(self, texts):
        return [[float(len(t)), 1.0] for t in texts]

    def embed_query(self, text):
        return [float(len(text)), 1.0]

    def texts_to_store(self, texts):
        return [t.replace("Maria Lopez", "<PERSON>") for t in texts]


def _store(tmp_path, pe=None, name="notes", **kw):
    pe = pe if pe is not None else PrivateEmbedding(model="fake", eps=20)
    return Chroma(collection_name=name, embedding_function=pe, persist_directory=str(tmp_path), **kw)


def test_signature_is_langchain_chromas_plus_store_raw_text_and_key():
    ours = inspect.signature(Chroma.__init__).parameters
    theirs = inspect.signature(langchain_chroma.Chroma.__init__).parameters
    assert list(ours)[: len(theirs)] == list(theirs)
    for name, p in theirs.items():
        assert (ours[name].kind, ours[name].default) == (p.kind, p.default), name
    assert set(ours) - set(theirs) == {"store_raw_text", "key", "metadata_text"}
    assert ours["store_raw_text"].kind is inspect.Parameter.KEYWORD_ONLY and ours["store_raw_text"].default is False
    assert ours["key"].kind is inspect.Parameter.KEYWORD_ONLY and ours["key"].default is None
    assert issubclass(Chroma, langchain_chroma.Chroma)


def test_importable_from_the_package_lazily():
    assert private_vectors.Chroma is Chroma
    assert lc_mod.Chroma is Chroma
    with pytest.raises(AttributeError, match="no attribute 'Chromaa'"):
        private_vectors.Chromaa  # noqa: B018


def test_headline_line_records_config_space_and_stores_no_text(tmp_path):
    pe = PrivateEmbedding(model="fake", eps=20)
    store = _store(tmp_path, pe)
    cfg = store._collection.configuration_json
    assert cfg["embedding_function"]["name"] == "private_vectors"
    assert cfg["embedding_function"]["config"]["eps"] == 20.0
    assert cfg["hnsw"]["space"] == pe.space
    ids = store.add_texts(DOCS, metadatas=[{"n": i} for i in range(len(DOCS))])
    got = store._collection.get(include=["documents", "embeddings", "metadatas"])
    assert got["documents"] == [""] * len(DOCS)  # no raw text on disk
    assert [m["n"] for m in got["metadatas"]] == list(range(len(DOCS)))
    clean = pe.encoder.encode(DOCS)
    order = [ids.index(i) for i in got["ids"]]
    assert np.linalg.norm(np.asarray(got["embeddings"]) - clean[order], axis=1).min() > 0.05  # perturbed
    hits = store.similarity_search("the patient had a cough and fever", k=1)
    assert hits[0].page_content == "" and hits[0].metadata == {"n": 1} and hits[0].id == ids[1]
    raw = b"Maria Lopez"
    assert not any(raw in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_store_raw_text_keeps_page_content(tmp_path):
    store = _store(tmp_path, store_raw_text=True)
    store.add_texts(DOCS)
    assert sorted(store.get()["documents"]) == sorted(DOCS)
    assert store.similarity_search("the patient had a cough and fever", k=1)[0].page_content == DOCS[1]
    assert store.store_raw_text is True
    with pytest.raises(InvalidTypeError, match="store_raw_text"):
        _store(tmp_path, store_raw_text="yes")


def test_text_stage_sanitizes_once_and_stores_that_text(tmp_path):
    pe = PrivateEmbedding(concept="PII", eps=20, sanitize="redact")
    store = _store(tmp_path, pe)
    store.add_texts(DOCS[:1], ids=["a"])
    kept = store.get(ids=["a"])["documents"][0]
    assert "Maria Lopez" not in kept and "Madrid" not in kept and kept == pe.sanitize_documents(DOCS[:1])[0]
    raw = _store(tmp_path, pe, name="raw", store_raw_text=True)  # the explicit flag wins
    raw.add_texts(DOCS[:1], ids=["a"])
    assert raw.get(ids=["a"])["documents"] == DOCS[:1]


def test_hook_of_another_embedding_class(tmp_path):
    store = _store(tmp_path, HookEmbedding(), name="hook")
    store.add_texts(DOCS[:1], ids=["a"])
    assert store.get(ids=["a"])["documents"] == ["<PERSON> flew to Madrid on Monday"]


def test_stored_texts_rules_and_a_bad_hook():
    assert stored_texts(object(), ["x", "y"]) == ["", ""]
    assert stored_texts(object(), ["x"], store_raw_text=True) == ["x"]

    class Bad:
        def texts_to_store(self, texts):
            return ["only one"]

    with pytest.raises(InvalidParameterError, match="texts_to_store"):
        stored_texts(Bad(), ["x", "y"])


def test_reopen_refuses_drift_and_rebuilds_without_a_function(tmp_path):
    store = _store(tmp_path)
    ids = store.add_texts(DOCS)
    with pytest.raises(ConfigMismatchError, match="eps"):
        _store(tmp_path, PrivateEmbedding(model="fake", eps=5))
    again = Chroma(collection_name="notes", persist_directory=str(tmp_path))  # no function given
    assert isinstance(again.embeddings, PrivateEmbedding) and again.embeddings.eps == 20.0
    assert again.similarity_search("quarterly revenue grew by twelve percent", k=1)[0].id == ids[2]


def test_keyed_collection_refuses_adds_without_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k1-0123456789abcdef")
    _store(tmp_path, PrivateEmbedding(model="fake", eps=20, seal=False)).add_texts(DOCS[:1])  # (sealed: refused at open)
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ConfigMismatchError, match="keyed"):
        _store(tmp_path, PrivateEmbedding(model="fake", eps=20))
    reopened = Chroma(collection_name="notes", persist_directory=str(tmp_path))
    with pytest.raises(ConfigMismatchError, match=KEY_ENV):
        reopened.add_texts(DOCS[1:2])


def test_from_texts_and_from_documents(tmp_path):
    pe = PrivateEmbedding(model="fake", eps=20)
    s1 = Chroma.from_texts(DOCS, pe, persist_directory=str(tmp_path), collection_name="texts")
    assert isinstance(s1, Chroma) and s1.get()["documents"] == [""] * len(DOCS)
    assert s1._collection.configuration_json["embedding_function"]["name"] == "private_vectors"
    docs = [Document(page_content=t, metadata={"i": i}, id=f"d{i}") for i, t in enumerate(DOCS)]
    s2 = Chroma.from_documents(docs, pe, persist_directory=str(tmp_path), collection_name="documents", store_raw_text=True)
    assert sorted(s2.get()["ids"]) == [f"d{i}" for i in range(len(DOCS))]
    assert sorted(s2.get()["documents"]) == sorted(DOCS)


def test_update_documents_and_fork_keep_the_rules(tmp_path, monkeypatch):
    store = _store(tmp_path)
    store.add_texts(DOCS[:2], ids=["a", "b"])
    store.update_documents(["a"], [Document(page_content="Maria Lopez moved to Lisbon", metadata={"v": 2})])
    got = store.get(ids=["a"])
    assert got["documents"] == [""] and got["metadatas"] == [{"v": 2}]
    client = store._client
    # local Chroma does not implement fork (Chroma Cloud does): stand in a copy for the plumbing
    pe = store.embeddings
    monkeypatch.setattr(type(store._collection), "fork", lambda self, new_name: client.create_collection(
        new_name, configuration={"hnsw": {"space": pe.space}, "embedding_function": pe}))
    forked = store.fork("notes-fork")
    assert isinstance(forked, Chroma) and forked.store_raw_text is False
    forked.add_texts(["another Maria Lopez note"], ids=["c"])
    assert forked.get(ids=["c"])["documents"] == [""]


def test_no_embedding_function_needs_the_flag(tmp_path):
    store = Chroma(collection_name="plain", persist_directory=str(tmp_path))
    with pytest.raises(InvalidParameterError, match="embedding_function"):
        store.add_texts(["raw text would reach Chroma's own embedder"])


def test_plain_space_collection_warns_once_when_the_space_matters(tmp_path):
    pe = PrivateEmbedding(model="fake", eps=20, store_geometry="none")  # raw vectors: the space matters
    langchain_chroma.Chroma(collection_name="plain", embedding_function=pe, persist_directory=str(tmp_path))
    with pytest.warns(UserWarning, match="'l2' space"):
        _store(tmp_path, pe, name="plain")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _store(tmp_path, pe, name="plain")  # once per collection/space pair
        _store(tmp_path, PrivateEmbedding(model="fake", eps=20), name="plain")  # default geometry: no warning


def test_new_process_reopen_without_import_names_the_fix(tmp_path):
    """Chroma reads no entry points: a new process that never imports the library's Chroma
    integration gets Chroma's generic error on first use (``import private_vectors`` alone
    touches no other package); importing ``private_vectors.chroma`` is the fix (stores guide)."""
    db = str(tmp_path / "db")
    col = chromadb.PersistentClient(db).create_collection("notes", embedding_function=PrivateEmbedding(model="fake"))
    col.add(ids=["a"], documents=["hello"])
    code = textwrap.dedent(f"""
        import chromadb
        col = chromadb.PersistentClient({db!r}).get_collection("notes")
        try:
            col.query(query_texts=["hello"], n_results=1)
        except ValueError as exc:
            print("ERROR", exc)
        import private_vectors
        try:
            col.query(query_texts=["hello"], n_results=1)
        except ValueError as exc:
            print("STILL", exc)
        import private_vectors.chroma
        col = chromadb.PersistentClient({db!r}).get_collection("notes")
        print("OK", col.query(query_texts=["hello"], n_results=1)["ids"])
    """)
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "ERROR Embedding function private_vectors not found. Add @register_embedding_function" in res.stdout
    assert "STILL Embedding function private_vectors not found" in res.stdout
    assert "OK [['a']]" in res.stdout


# -- Chroma's own embedding-function schema tests, on the registered function ------------------
schemas = pytest.importorskip("chromadb.test.utils.test_embedding_function_schemas")


@pytest.fixture
def mock_embeddings():
    return lambda docs: [np.zeros(4, dtype=np.float32) for _ in docs]


def test_chroma_schema_validate_config_with_schema(monkeypatch, mock_embeddings):
    """Chroma's test builds ``PrivateEmbedding()`` (the packaged default model) with PIL and
    others replaced by mocks; transformers must be imported before that, as in any real process."""
    assert "private_vectors" in schemas.get_embedding_function_names()
    PrivateEmbedding()  # imports transformers/sentence-transformers for real first
    schemas.TestEmbeddingFunctionSchemas().test_validate_config_with_schema(
        "private_vectors", mock_embeddings, monkeypatch)


def test_chroma_schema_roundtrip_of_a_mocked_config_is_refused():
    """The expected difference: Chroma's round-trip test builds from a MagicMock config; the
    strict validation (which the drift and key checks rely on) refuses it by name. Run in a
    subprocess: the test replaces ``PrivateEmbedding.__new__`` and CPython does not restore the
    constructor slot cleanly afterwards."""
    code = textwrap.dedent("""
        import numpy as np
        import pytest
        from chromadb.test.utils.test_embedding_function_schemas import TestEmbeddingFunctionSchemas
        import private_vectors.chroma
        mp = pytest.MonkeyPatch()
        try:
            TestEmbeddingFunctionSchemas().test_embedding_function_config_roundtrip(
                "private_vectors", lambda docs: [np.zeros(4, dtype=np.float32) for _ in docs], mp)
            print("PASSED")
        except Exception as exc:
            print("REFUSED", type(exc).__name__, exc)
    """)
    res = _zygote.run(["-c", code], timeout=180)  # a new process (tests/_zygote.py)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "REFUSED InvalidTypeError config: expected a PrivateEmbedding config dict, received MagicMock" in res.stdout


def test_a_real_config_round_trips():
    cfg = PrivateEmbedding(model="fake").get_config()
    assert PrivateEmbedding.build_from_config(cfg).get_config() == cfg


def test_chroma_schema_generic_checks():
    t = schemas.TestEmbeddingFunctionSchemas()
    t.test_schema_required_fields()
    t.test_schema_additional_properties()
