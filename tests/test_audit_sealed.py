"""The audit of a sealed store: it recognises the store (config "seal", pv_sealed records, markers),
reports what is readable without the key (no document text), what the records hold (with the key)
and the key holder's retrieval. FakeEncoder stores; skipped without ../shared/data/pii."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

chromadb = pytest.importorskip("chromadb")
pytest.importorskip("presidio_analyzer")

from private_vectors import PrivateEmbedding  # noqa: E402
from private_vectors.errors import ConfigMismatchError  # noqa: E402
from private_vectors.eval.audit import audit  # noqa: E402

NAMES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pii" / "FakeNameGenerator.com_3000.csv"
pytestmark = pytest.mark.skipif(not NAMES.is_file(), reason="../shared/data/pii/FakeNameGenerator.com_3000.csv absent")
KEY = "sealed audit test key, not a secret at all"
SALT = b"sealed-audit-slt"


def _embedding(seal: bool) -> PrivateEmbedding:
    return PrivateEmbedding(concept="PII", eps=10, model="fake", random_state=0, key=KEY, key_salt=SALT, seal=seal)


def _write(folder: Path, seal: bool, corpus: Any) -> Path:
    from private_vectors.eval.sealed_store import SealedStore
    from private_vectors.eval.store import VectorStore

    client = chromadb.PersistentClient(path=str(folder))
    kind = SealedStore if seal else VectorStore
    store = kind(_embedding(seal), client=client, name="notes") if seal else \
        kind(_embedding(seal), "chroma", client=client, name="notes")
    store.add(corpus.ids, corpus.texts)
    del store, client
    return folder


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from private_vectors.eval.synthetic import first_hour_corpus

    corpus = first_hour_corpus(NAMES, 40)
    root = tmp_path_factory.mktemp("sealed-audit")
    raw = dict(zip(corpus.ids, corpus.texts, strict=True))
    out = {"corpus": corpus, "raw": raw}
    for seal in (True, False):
        folder = _write(root / ("sealed" if seal else "clear"), seal, corpus)
        out["sealed" if seal else "clear"] = {
            "folder": folder, "report": audit(folder, raw, key=KEY, attackers={"prior": {}}, clean_baseline=False,
                                              progress=False)}
    return out


def test_the_audit_recognises_a_sealed_store_and_what_is_readable(audited: dict[str, Any]) -> None:
    rep = audited["sealed"]["report"]
    assert rep["sealed"]["records"] == rep["sealed"]["markers"] == rep["sealed"]["documents"] == 40
    r = rep["residual_pii"]
    assert r["documents_with_text"] == 0 and r["identifiers"] == 0 and r["raw_identifiers_left"] == 0
    assert "Without the key the store keeps no document text: 40 of its 40 documents are sealed records" in rep["headline"]
    assert audited["clear"]["report"]["sealed"] is None


def test_the_records_hold_what_the_clear_store_shows(audited: dict[str, Any]) -> None:
    inside = audited["sealed"]["report"]["sealed_content"]
    clear = audited["clear"]["report"]["residual_pii"]
    for k in ("raw_identifiers", "raw_identifiers_left", "raw_values_left_by_type", "findings_by_type"):
        assert inside[k] == clear[k], k  # the same text stage and key: the same sanitized text, now sealed
    assert "Inside the records (what is read with the key)" in audited["sealed"]["report"]["headline"]


def test_no_planted_value_is_on_the_sealed_stores_disk(audited: dict[str, Any]) -> None:
    corpus = audited["corpus"]
    planted = [v for pl in corpus.planted for t in ("PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER") for v in pl.get(t, [])]
    def on_disk(folder: Path) -> bytes:
        return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    runs = [" ".join(t.split()[:4]).encode() for t in _embedding(False).sanitize_documents(corpus.texts)
            if len(t.split()) >= 4]
    clear, sealed = on_disk(audited["clear"]["folder"]), on_disk(audited["sealed"]["folder"])
    assert sum(r in clear for r in runs) > len(runs) // 2  # the scan reads the clear store's text (control)
    assert sum(r in sealed for r in runs) == 0
    assert sum(v.encode() in sealed for v in planted) == 0


def test_the_key_holder_retrieval_and_the_key(audited: dict[str, Any]) -> None:
    q = audited["sealed"]["report"]["retrieval"]
    assert q["key_holder"] and q["candidates"] == 40 and q["documents"] == 40
    assert q["ndcg@10"] >= q["ndcg@10_noisy"]
    assert "for the key holder (exact vectors re-rank the noisy candidates)" in audited["sealed"]["report"]["headline"]
    with pytest.raises(ConfigMismatchError, match="key"):
        audit(audited["sealed"]["folder"], audited["raw"], attackers={"prior": {}}, clean_baseline=False,
              progress=False)
