"""PrivateEmbedding(sanitize=...): text stage -> encoder -> mechanism, and the text the stores keep.

Tests marked ``needs_sanitizer`` use the real :class:`private_vectors.text.Sanitizer` (issue 17a's
text room) and are skipped, with that reason, when it is not installed in this tree.
"""

from __future__ import annotations

import json
import re
import uuid

import chromadb
import numpy as np
import pytest

from private_vectors import PrivateEmbedding
from private_vectors.config import DRIFT_FIELDS, check_config_compatible
from private_vectors.errors import ConfigMismatchError, InvalidParameterError, InvalidTypeError
from private_vectors.integrations.chroma import add_documents, check_collection, open_collection
from private_vectors.integrations.faiss import PrivateFaissIndex
from private_vectors.integrations.langchain import chroma_store

try:
    from private_vectors.text import Sanitizer  # noqa: F401

    HAS_SANITIZER = True
except ImportError:
    HAS_SANITIZER = False
needs_sanitizer = pytest.mark.skipif(not HAS_SANITIZER, reason="private_vectors.text.Sanitizer (issue 17a) not present")

KEY = "a test key for the text pipeline, 32+ bytes long"
DOCS = [
    "Amelia Okafor ordered a blue lamp and asked for delivery to Leeds.",
    "The invoice for Amelia Okafor was sent to amelia.okafor@example.com on Monday.",
    "Jonas Berger called from 555-201-7788 about a broken kettle.",
    "Jonas Berger returned the kettle at the Hamburg branch.",
    "The warehouse moved to a new building near the river.",
]
NAMES = ["Amelia", "Okafor", "Jonas", "Berger"]


def _ef(**kw):
    kw.setdefault("model", "fake")
    kw.setdefault("random_state", 0)
    kw.setdefault("eps", 10)
    return PrivateEmbedding(**kw)


def _client():
    return chromadb.EphemeralClient()


def _name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


# --------------------------------------------------------------------------- no text stage
def test_sanitize_none_is_todays_behaviour() -> None:
    ef = _ef(concept="PII", eps=10, key=KEY, sanitize=None)
    assert ef.sanitizer is None and ef.get_config()["sanitizer"] is None
    assert ef.sanitize_documents(DOCS) == DOCS and ef.pipeline.sanitize_queries(["q"]) == ["q"]
    np.testing.assert_array_equal(ef.embed_array(DOCS), ef.pipeline.embed_sanitized(DOCS))
    report = ef.privacy_report()
    assert report["text_stage"]["enabled"] is False and "raw" in report["text_stage"]["note"]
    assert "sanitizer" in DRIFT_FIELDS


def test_auto_is_off_for_non_span_concepts() -> None:
    assert _ef(eps=10).sanitizer is None  # no concept
    assert _ef(eps=10, concept=None, sanitize="auto").get_config()["sanitizer"] is None


def test_bad_sanitize_values_are_refused_by_name() -> None:
    with pytest.raises(InvalidParameterError, match="sanitize"):
        _ef(sanitize="scramble")
    with pytest.raises(InvalidTypeError, match="sanitize"):
        _ef(sanitize=3)
    with pytest.raises(InvalidParameterError, match="key") as exc:
        _ef(concept="PII", sanitize="surrogate")
    assert "public substitution" in str(exc.value)


def test_drift_on_the_sanitizer_field_ignores_package_versions() -> None:
    base = _ef(eps=10, sanitize=None).get_config()
    redact = {**base, "sanitizer": {"policy": "redact", "keyed": False,
                                    "detectors": [{"name": "presidio", "versions": {"spacy": "3.8.0"}}]}}
    with pytest.raises(ConfigMismatchError, match="sanitizer"):
        check_config_compatible(base, redact)
    with pytest.raises(ConfigMismatchError, match="sanitizer"):
        check_config_compatible(redact, {**redact, "sanitizer": {**redact["sanitizer"], "policy": "surrogate"}})
    upgraded = {**redact, "sanitizer": {**redact["sanitizer"],
                                        "detectors": [{"name": "presidio", "versions": {"spacy": "3.9.1"}}]}}
    check_config_compatible(redact, upgraded)  # a detector upgrade alone is not a drift
    old = {k: v for k, v in base.items() if k != "sanitizer"}  # written before the text stage
    check_config_compatible(old, base)
    assert PrivateEmbedding.build_from_config(old).sanitizer is None


def test_chroma_store_keeps_no_text_without_a_text_stage() -> None:
    ef = _ef(eps=10, sanitize=None)
    store = chroma_store(ef, collection_name=_name(), client=_client())
    store.add_texts(DOCS, ids=[f"d{i}" for i in range(len(DOCS))], metadatas=[{"i": 0}, {}, {"i": 2}])
    got = store._collection.get(include=["documents", "metadatas"])
    assert got["documents"] == [""] * len(DOCS)
    assert got["metadatas"][0] == {"i": 0} and got["metadatas"][2] == {"i": 2}
    hits = store.similarity_search("Jonas Berger kettle", k=2)
    assert {h.id for h in hits} <= {f"d{i}" for i in range(len(DOCS))} and len(hits) == 2
    raw = chroma_store(ef, collection_name=_name(), client=_client(), store_raw_text=True)
    raw.add_texts(DOCS)
    assert sorted(raw._collection.get(include=["documents"])["documents"]) == sorted(DOCS)
    with pytest.raises(InvalidTypeError, match="store_raw_text"):
        chroma_store(ef, collection_name=_name(), client=_client(), store_raw_text="yes")


def test_native_add_documents_without_a_text_stage() -> None:
    ef = _ef(eps=10, sanitize=None)
    col = _client().create_collection(_name(), embedding_function=ef)
    assert add_documents(col, ids=["a", "b"], documents=DOCS[:2]) is None
    got = col.get(include=["documents", "embeddings"])
    assert got["documents"] == [None, None] and len(got["embeddings"]) == 2
    assert add_documents(col, ids=["c"], documents=DOCS[2:3], store_raw_text=True) == DOCS[2:3]
    assert col.get(ids=["c"], include=["documents"])["documents"] == DOCS[2:3]
    with pytest.raises(InvalidParameterError, match="ids"):
        add_documents(col, ids=["x"], documents=DOCS[:2])
    assert col.count() == 3  # the refused call added nothing
    with pytest.raises(ConfigMismatchError):
        add_documents(col, ids=["y"], documents=DOCS[:1], embedding=_ef(eps=20, sanitize=None))


# --------------------------------------------------------------------------- with the text stage
def _counting(sanitizer):
    """Wrap a real Sanitizer so that every text it sanitizes (apply, or apply_recorded for a
    store that seals restore records) is recorded."""
    seen: list[str] = []
    apply, recorded = sanitizer.apply, sanitizer.apply_recorded

    def counted(texts):
        seen.extend(texts)
        return apply(texts)

    def counted_recorded(texts):
        seen.extend(texts)
        return recorded(texts)

    sanitizer.apply, sanitizer.apply_recorded = counted, counted_recorded
    return seen


def _raw_left(texts) -> list[str]:
    return [n for t in texts for n in NAMES if re.search(rf"\b{n}\b", t or "")]


def _detected_left(sanitizer, texts) -> list[str]:
    """Raw values the sanitizer detects in DOCS[i] that are still present in ``texts[i]``."""
    spans = sanitizer.spans(DOCS)
    assert any(spans)
    return [raw[sp.start:sp.end] for raw, out, ss in zip(DOCS, texts, spans, strict=True) for sp in ss
            if raw[sp.start:sp.end] in (out or "")]


@needs_sanitizer
def test_default_for_span_concepts_is_redact_and_config_has_no_key() -> None:
    ef = _ef(concept="PII", eps=10, key=KEY)
    cfg = ef.get_config()
    assert cfg["sanitizer"]["policy"] == "redact"
    assert KEY not in repr(cfg) and KEY not in repr(ef) and KEY not in ef.privacy_report_text()
    assert ef.privacy_report()["text_stage"]["policy"] == "redact"
    out = ef.sanitize_documents(DOCS)
    assert not _detected_left(ef.sanitizer, out) and out[-1] == DOCS[-1]


@needs_sanitizer
@pytest.mark.parametrize("path", ["chroma_store", "add_documents", "faiss", "chroma_native"])
def test_each_text_is_sanitized_once_and_stored_sanitized(path: str) -> None:
    ef = _ef(concept="PII", eps=10, key=KEY, sanitize="surrogate")
    seen = _counting(ef.sanitizer)
    ids = [f"d{i}" for i in range(len(DOCS))]
    if path == "chroma_store":
        store = chroma_store(ef, collection_name=_name(), client=_client())
        store.add_texts(DOCS, ids=ids)  # keyed: sealed; the key holder reads the sanitized texts
        assert all(d.startswith("pv-sealed:") for d in store._collection.get(include=["documents"])["documents"])
        stored = [d.page_content for d in store.get_by_ids(ids)]
    elif path == "add_documents":
        from private_vectors.chroma import get

        col = _client().create_collection(_name(), embedding_function=ef)
        add_documents(col, ids=ids, documents=DOCS)
        assert all(d.startswith("pv-sealed:") for d in col.get(include=["documents"])["documents"])
        stored = get(col, ids=ids)["documents"]
    elif path == "faiss":
        from private_vectors.integrations.faiss_sealed import sealed_payloads

        index = PrivateFaissIndex(ef, kind="flat")  # keyed: sealed; the records hold the sanitized texts
        new = index.add_texts(DOCS)
        assert all(index.texts[i].startswith("pv-sealed:") for i in new)
        stored = [p.text for p in sealed_payloads(index, new)]
    else:  # native add: vectors sanitized, but Chroma keeps the documents it was given
        col = _client().create_collection(_name(), embedding_function=ef)
        col.add(ids=ids, documents=DOCS)
        stored = None
    assert sorted(seen) == sorted(DOCS)  # every text through the sanitizer exactly once
    if stored is not None:
        assert stored == ef.sanitizer.apply(DOCS)
        assert not _detected_left(ef.sanitizer, stored)


@needs_sanitizer
def test_surrogate_queries_find_the_surrogate_documents_through_chroma_store() -> None:
    ef = _ef(concept="PII", eps=1000, key=KEY, sanitize="surrogate")
    store = chroma_store(ef, collection_name=_name(), client=_client())
    store.add_texts(DOCS, ids=[f"d{i}" for i in range(len(DOCS))])
    hits = store.similarity_search("What do the records say about Jonas Berger?", k=2)
    assert {h.id for h in hits} == {"d2", "d3"}
    assert not _raw_left(h.page_content for h in hits)
    other = _ef(concept="PII", eps=1000, key=KEY + " (another)", sanitize="surrogate")
    assert other.sanitize_documents(DOCS[:1]) != ef.sanitize_documents(DOCS[:1])


@needs_sanitizer
def test_headline_line_in_langchain_chroma() -> None:
    from langchain_chroma import Chroma

    ef = PrivateEmbedding(concept="PII", eps=10, model="fake", key=KEY)
    store = Chroma(collection_name=_name(), embedding_function=ef, client=_client())
    store.add_texts(DOCS)
    assert len(store.similarity_search("blue lamp", k=1)) == 1
    assert ef.get_config()["sanitizer"]["policy"] == "redact"


@needs_sanitizer
def test_reopened_collection_refuses_another_sanitizer(tmp_path) -> None:
    client = chromadb.PersistentClient(str(tmp_path))
    ef = _ef(concept="PII", eps=10, key=KEY, sanitize="redact")
    col = client.create_collection("notes", embedding_function=ef)
    add_documents(col, ids=["a"], documents=DOCS[:1])
    # the library's own paths refuse (a plain client.get_collection checks names only, as Chroma does)
    with pytest.raises(ConfigMismatchError, match="sanitizer"):
        open_collection(client, "notes", _ef(concept="PII", eps=10, key=KEY, sanitize="surrogate"))
    with pytest.raises(ConfigMismatchError, match="sanitizer"):
        check_collection(client.get_collection("notes"), _ef(concept="PII", eps=10, key=KEY, sanitize=None))
    same = open_collection(client, "notes", _ef(concept="PII", eps=10, key=KEY, sanitize="redact"))
    assert same.count() == 1


@needs_sanitizer
def test_keyed_query_index_persists_with_the_collection(tmp_path) -> None:
    from private_vectors.integrations.chroma import (
        QUERY_INDEX_KEY,
        open_collection,
        query_index_collection_name,
    )

    ef = _ef(concept="PII", eps=10, key=KEY, sanitize="surrogate")
    store = chroma_store(ef, collection_name="notes", persist_directory=str(tmp_path))
    store.add_texts(DOCS)
    assert QUERY_INDEX_KEY not in (store._collection.metadata or {})  # its own collection, one record per HMAC
    side = chromadb.PersistentClient(str(tmp_path)).get_collection(query_index_collection_name(store._collection))
    got = side.get(include=["metadatas"])
    assert got["ids"] and not _detected_left(ef.sanitizer, [json.dumps(got) + json.dumps(side.metadata)] * len(DOCS))
    query = "what do the records say about amelia okafor"
    reopened = _ef(concept="PII", eps=10, key=KEY, sanitize="surrogate")
    chroma_store(reopened, collection_name="notes", persist_directory=str(tmp_path))
    assert "amelia" not in reopened.pipeline.sanitize_queries([query])[0].lower()
    assert reopened.pipeline.sanitize_queries([query]) == ef.pipeline.sanitize_queries([query])
    again = _ef(concept="PII", eps=10, key=KEY, sanitize="surrogate")
    open_collection(chromadb.PersistentClient(str(tmp_path)), "notes", again)
    assert again.pipeline.sanitize_queries([query]) == ef.pipeline.sanitize_queries([query])


@needs_sanitizer
def test_faiss_sidecar_keeps_the_query_index_and_no_raw_values(tmp_path) -> None:
    ef = _ef(concept="PII", eps=10, key=KEY, sanitize="surrogate")
    index = PrivateFaissIndex(ef, kind="flat")
    index.add_texts(DOCS)
    index.save(tmp_path / "idx")
    sidecar = json.loads((tmp_path / "idx" / "private_vectors.json").read_text())
    texts = sidecar.pop("texts")
    assert not _detected_left(ef.sanitizer, [texts[str(i)] for i in range(len(DOCS))])  # per document
    rest = json.dumps(sidecar)  # config + keyed query index: HMACs and labels only
    assert sidecar["query_index"]["entries"] and not _detected_left(ef.sanitizer, [rest] * len(DOCS))
    loaded = PrivateFaissIndex.load(tmp_path / "idx", _ef(concept="PII", eps=10, key=KEY, sanitize="surrogate"))
    query = "what do the records say about jonas berger"
    assert loaded.embedding.pipeline.sanitize_queries([query]) == ef.pipeline.sanitize_queries([query])
