"""The audit counts what is on disk: on a store of 200 generated notes (names in normal and lower case,
ages, cities, addresses, e-mails, phones, the name as metadata) written through the library, its count
of identifiers kept equals a byte-level count of the planted values in the store's files; no
national-ID type is counted on data that holds none; the headline names retrieval and personal ids;
the plot draws only what it has. FakeEncoder stores; skipped without ../shared/data/pii."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

chromadb = pytest.importorskip("chromadb")
pytest.importorskip("presidio_analyzer")

from private_vectors import PrivateEmbedding  # noqa: E402
from private_vectors.eval.audit import audit  # noqa: E402
from private_vectors.eval.audit_detect import GENERIC_TYPES, AuditDetector, case_view, personal_ids  # noqa: E402
from private_vectors.eval.audit_report import _plot_series, headline  # noqa: E402

NAMES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pii" / "FakeNameGenerator.com_3000.csv"
needs_names = pytest.mark.skipif(not NAMES.is_file(), reason="../shared/data/pii/FakeNameGenerator.com_3000.csv absent")
IDENTIFIERS = ("PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from private_vectors.eval.synthetic import first_hour_corpus
    from private_vectors.integrations.chroma import add_documents, create_collection

    corpus = first_hour_corpus(NAMES, 200)
    folder = tmp_path_factory.mktemp("first-hour") / "db"
    client = chromadb.PersistentClient(path=str(folder))
    col = create_collection(client, "notes", PrivateEmbedding(concept="PII", eps=10, model="fake", random_state=0))
    add_documents(col, ids=corpus.ids, documents=corpus.texts, metadatas=corpus.metadatas)
    del col, client
    report = audit(folder, dict(zip(corpus.ids, corpus.texts, strict=True)), attackers={"prior": {}},
                   clean_baseline=False, progress=False)
    return {"corpus": corpus, "folder": folder, "report": report}


def _on_disk(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


@needs_names
def test_identifiers_kept_equal_a_byte_count_of_the_store(written: dict[str, Any]) -> None:
    corpus, blob, r = written["corpus"], _on_disk(written["folder"]), written["report"]["residual_pii"]
    planted = [v for pl in corpus.planted for t in IDENTIFIERS for v in pl.get(t, [])]
    full = sum(v.encode() in blob for v in planted)
    names = [v for pl in corpus.planted for v in pl["PERSON"]]
    part = sum(v.encode() not in blob and any(w.encode() in blob for w in v.split()) for v in names)
    assert full > 0, "the default text stage keeps some names of these notes: the count must see them"
    assert r["raw_identifiers_left"] == full
    assert r["raw_identifiers_left_in_part"] == part
    assert r["raw_identifiers"] == len(planted)  # every planted identifier found in the raw notes, nothing more
    lower = sum(v.encode() in blob for v in names if v.islower())
    assert r["raw_values_left_by_type"]["PERSON"] >= lower > 0  # the lower-case names are seen


@needs_names
def test_no_national_id_type_on_data_that_holds_none(written: dict[str, Any]) -> None:
    r = written["report"]["residual_pii"]
    assert set(r["findings_by_type"]) | set(r["raw_values_by_type"]) <= GENERIC_TYPES
    numbers = ["Call the office on 020 7946 0958 or +44 20 7946 0959.", "Her number is 943 476 5919.",
               "Paid with 4111 1111 1111 1111 and 5500 0000 0000 0004.", "Account holder: call 415 555 0142 today.",
               "Licence check for 12345678 and 7946 0958 pending."]
    found = AuditDetector().find(numbers)
    assert {f.type for fs in found for f in fs} <= GENERIC_TYPES
    assert any(f.type == "PHONE_NUMBER" for f in found[1]) and any(f.type == "CREDIT_CARD" for f in found[2])


@needs_names
def test_the_headline_names_what_is_kept_and_retrieval(written: dict[str, Any]) -> None:
    rep = written["report"]
    r = rep["residual_pii"]
    assert f"keeps {r['raw_identifiers_left']} of the {r['raw_identifiers']} identifier values" in rep["headline"]
    assert "Retrieval kept (self-retrieval): NDCG@10" in rep["headline"] and "unprotected" in rep["headline"]
    assert rep["ids"] == {"ids": 200, "personal": 0, "by_type": {}}
    assert not any(v in rep["headline"] for pl in written["corpus"].planted for v in pl["PERSON"])  # counts only


def test_case_view_capitalises_unknown_lower_case_words_only() -> None:
    assert case_view("call yuuka shimasaki about the invoice") == "call Yuuka Shimasaki about the Invoice"
    assert case_view("Write to k035q@post0.example.org") == "Write to k035q@post0.example.org"
    assert len(case_view("größe straße ünal")) == len("größe straße ünal")


def test_ids_that_look_personal_are_flagged() -> None:
    got = personal_ids(["note-001", "maria.lopez@example.org", "+1 415 555 0142", "a1b2c3d4", "pv-3KQ7Z2"])
    assert got == {"ids": 5, "personal": 2, "by_type": {"EMAIL_ADDRESS": 1, "PHONE_NUMBER": 1}}
    named = personal_ids(["ottoline_vanderpump", "doc-17"], AuditDetector())
    assert named["by_type"] == {"PERSON": 1}


def _report(clean: bool, after: bool) -> dict[str, Any]:
    row = {"name_recovery": 0.3, "token_recovery": 0.2, "names_first": 0.3, "names_last": 0.3, "names_full": 0.1,
           "clean": {"name_recovery": 0.6, "token_recovery": 0.5} if clean else None}
    rep: dict[str, Any] = {"attack": {"attackers": {"mlc": row, "prior": dict(row, clean=None)}}}
    if after:
        rep["after"] = {"attack": {"attackers": {"mlc": dict(row, name_recovery=0.02, clean=None)}}}
    return rep


def test_the_plot_draws_and_names_only_the_series_it_has() -> None:
    assert [s for s, _ in _plot_series(_report(clean=False, after=False))] == ["stored vectors"]
    assert [s for s, _ in _plot_series(_report(clean=True, after=False))] == ["stored vectors",
                                                                              "clean vectors (no protection)"]
    assert [s for s, _ in _plot_series(_report(clean=False, after=True))] == ["stored vectors",
                                                                              "through private_vectors"]


def test_headline_of_a_protected_store_names_retrieval_kept() -> None:
    rep = {"store": {"concept": "PII"}, "ids": {"ids": 20, "personal": 3, "by_type": {"EMAIL_ADDRESS": 3}},
           "attack": {"strongest": "mlc", "names_scored": 10.0, "name_recovery": 0.05, "name_recovery_prior": 0.04,
                      "names_recoverable": False},
           "residual_pii": {"documents": 20, "documents_with_text": 20, "raw_values": 40, "raw_values_left": 12,
                            "raw_identifiers": 30, "raw_identifiers_left": 4, "raw_identifiers_left_in_part": 2,
                            "raw_values_left_by_type": {"PERSON": 4, "LOCATION": 8}},
           "retrieval": {"mode": "self-retrieval", "ndcg@10": 0.455, "ndcg@10_clean": 0.943, "ndcg@10_kept": 0.4825}}
    text = headline(rep)
    assert "keeps 4 of the 30 identifier values" in text and "and 2 more in part" in text
    assert "8 of the 10 places, ages, dates" in text
    assert "NDCG@10 0.455 through the store against 0.943 unprotected (48.2 %)" in text
    assert "3 of the 20 ids look personal (EMAIL_ADDRESS 3)" in text
