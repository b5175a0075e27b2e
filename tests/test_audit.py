"""``private-vectors audit``: stores written through each protected path, audited against the raw
documents; the figures must be the harness's own on the same data and seed. FakeEncoder stores
(fast); the data-backed tests skip when ../shared/data/pii is absent."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from private_vectors import PrivateEmbedding
from private_vectors.errors import ConfigMismatchError, InvalidParameterError
from private_vectors.eval.audit import DEFAULT_ATTACKERS, audit
from private_vectors.eval.audit_attack import name_parts, name_scorer
from private_vectors.eval.audit_detect import AuditDetector

chromadb = pytest.importorskip("chromadb")
pytest.importorskip("presidio_analyzer")

PII = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pii"
needs_pii = pytest.mark.skipif(
    not (PII / "templates.txt").is_file() or not (PII / "FakeNameGenerator.com_3000.csv").is_file(),
    reason="../shared/data/pii (templates.txt, FakeNameGenerator.com_3000.csv) not present")

KEY = "audit test key, not a secret at all"
SALT = b"audit-test-salt!"
N_DOCS = 120
SMALL = 60
POLICIES = {"redact": {"sanitize": "redact"},
            "surrogate": {"sanitize": "surrogate", "key": KEY, "key_salt": SALT, "seal": False},  # a keyed clear store (sealed ones: test_audit_sealed.py)
            "none": {"sanitize": None, "eps": 20}}
# The unprotected store is also weakly noised (eps=20): with the fake encoder and 29 scored names
# the attacker's margin over guessing at eps=10 sits near the 0.10 threshold (0.086 on a fresh install,
# above 0.10 on an older one), so the headline test would test the sample, not the headline.


def _embedding(policy: str) -> PrivateEmbedding:
    options = {"eps": 10, **POLICIES[policy]}
    return PrivateEmbedding(concept="PII", model="fake", random_state=0, **options)


@pytest.fixture(scope="module")
def corpus() -> Any:
    if not (PII / "templates.txt").is_file():
        pytest.skip("../shared/data/pii (templates.txt) not present")
    from private_vectors.eval.entity import make_entity_corpus

    return make_entity_corpus(PII, n_identities=30, n_docs=N_DOCS, n_person_queries=20, n_city_queries=0, seed=0)


def _raw(corpus: Any) -> dict[str, str]:
    return {d.id: d.text for d in corpus.documents}


def _write_chroma(folder: Path, policy: str, raw: dict[str, str], name: str = "docs") -> Path:
    from private_vectors.integrations.chroma import add_documents

    ef = _embedding(policy)
    client = chromadb.PersistentClient(path=str(folder))
    col = client.create_collection(name, embedding_function=ef, configuration={"hnsw": {"space": ef.space}})
    add_documents(col, ids=list(raw), documents=list(raw.values()))  # one batch, as the harness's store
    return folder


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, corpus: Any) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("audit-stores")
    return {p: _write_chroma(root / p, p, _raw(corpus)) for p in POLICIES}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory, corpus: Any) -> dict[str, Path]:
    """Small stores (60 documents) for the fast tests."""
    root = tmp_path_factory.mktemp("audit-small")
    raw = dict(list(_raw(corpus).items())[:SMALL])
    return {p: _write_chroma(root / p, p, raw) for p in ("none", "surrogate")}


@pytest.fixture(scope="module")
def reports(stores: dict[str, Path], corpus: Any) -> dict[str, dict[str, Any]]:
    out = {}
    for policy, folder in stores.items():
        before = _hashes(folder)
        out[policy] = audit(folder, _raw(corpus), key=KEY if policy == "surrogate" else None, progress=False)
        assert _hashes(folder) == before, f"the {policy} store changed during its audit"
    return out


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _harness(policy: str, corpus: Any) -> dict[str, Any]:
    """The harness's own run on the same documents and seed: a retrieval task whose leakage
    set is its own documents (spaCy tokens), the same attackers."""
    from private_vectors.eval.runner import _leak_from_texts, adaptive_transforms, build_attackers
    from private_vectors.eval.tasks import Task

    ds = corpus.retrieval("entity")
    ids = list(ds.corpus)
    leak, lids = _leak_from_texts("entity", [ds.corpus[i] for i in ids], ids, "spacy")
    task = Task("entity", "retrieval", "ndcg@10", retrieval=ds, leakage=leak, leakage_in_store=False,
                meta={"leak_ids": lids})
    ef = _embedding(policy)
    made = build_attackers({"attackers": {**DEFAULT_ATTACKERS, "prior": {}}}, ef.encoder)
    return task.run(ef, {n: f for n, (f, _) in made.items()}, seed=0,
                    attack_transforms=adaptive_transforms(ef, {}))


# --------------------------------------------------------------------------- agreement with the harness
@needs_pii
@pytest.mark.parametrize("policy", list(POLICIES))
def test_figures_are_the_harness_figures(policy: str, reports: dict[str, dict[str, Any]], corpus: Any) -> None:
    got = reports[policy]["attack_raw"]["stored"]
    want = _harness(policy, corpus)
    for a in ("mlc", "nn", "prior"):
        assert got[f"leakage_{a}"] == want[f"leakage_{a}"], a
        assert got[f"confidence_{a}"] == want[f"confidence_{a}"], a
    assert reports[policy]["coverage"]["audited"] == N_DOCS


@needs_pii
def test_unprotected_text_trips_the_name_headline(reports: dict[str, dict[str, Any]]) -> None:
    none = reports["none"]["attack"]
    assert none["names_recoverable"] and none["name_margin"] > 0.10
    assert "Names can be read from the stored vectors" in reports["none"]["headline"]
    red = reports["redact"]["attack"]
    assert not red["names_recoverable"], red
    assert "Names cannot be read from the stored vectors beyond guessing" in reports["redact"]["headline"]
    # the clean vectors give the scale: at least what the redacted store gives away
    assert red["attackers"]["mlc"]["clean"]["name_recovery"] > red["name_recovery"]


@needs_pii
def test_redacted_residual_pii_matches_a_direct_count(reports: dict[str, dict[str, Any]], stores: dict[str, Path]
                                                      ) -> None:
    client = chromadb.PersistentClient(path=str(stores["redact"]))
    from chromadb.api.models.Collection import Collection

    model = client._server.get_collection("docs", tenant=client.tenant, database=client.database)
    texts = Collection(client=client._server, model=model, embedding_function=None).get(include=["documents"])
    direct = Counter(f.type for fs in AuditDetector().find(texts["documents"]) for f in fs)
    res = reports["redact"]["residual_pii"]
    assert res["findings_by_type"] == dict(sorted(direct.items()))
    assert res["findings"] == sum(direct.values())
    assert res["documents_with_text"] == N_DOCS
    assert reports["none"]["residual_pii"]["documents_with_text"] == 0


@needs_pii
def test_raw_values_left_are_counted(reports: dict[str, dict[str, Any]], corpus: Any) -> None:
    raw = list(_raw(corpus).values())
    found = AuditDetector().find(raw)
    names = {f.value for fs in found for f in fs if f.type == "PERSON"}
    red = reports["redact"]["residual_pii"]
    detected = sum(len({f.value for f in fs if len(f.value.strip()) >= 2}) for fs in found)
    assert red["raw_values"] == detected + red["raw_values_from_difference"]
    assert red["raw_values_left"] < red["raw_values"] / 2  # the text stage removed most of them
    assert red.get("raw_values_left_by_type", {}).get("PERSON", 0) < len(names)


@needs_pii
def test_counts_not_values(reports: dict[str, dict[str, Any]], corpus: Any, stores: dict[str, Path]) -> None:
    text = json.dumps(reports["redact"], default=float)
    people = {corpus.identities[d.identity].surname for d in corpus.documents}
    assert not any(p in text for p in people)
    shown = audit(stores["redact"], _raw(corpus), show_values=True, clean_baseline=False, progress=False,
                  attackers={"prior": {}})
    assert shown["residual_pii"]["values_left_by_type"] or shown["residual_pii"]["finding_values"]


@needs_pii
def test_surrogate_store_report(reports: dict[str, dict[str, Any]]) -> None:
    rep = reports["surrogate"]
    assert rep["store"]["protection"]["keyed"] and rep["store"]["protection"]["text_stage"] == "surrogate"
    assert KEY not in json.dumps(rep, default=float)
    assert rep["retrieval"]["mode"] == "self-retrieval" and 0 <= rep["retrieval"]["top10_overlap"] <= 1


# --------------------------------------------------------------------------- errors, coverage, other stores
@needs_pii
def test_wrong_or_missing_key_is_refused(small: dict[str, Path], corpus: Any) -> None:
    with pytest.raises(ConfigMismatchError, match="key"):
        audit(small["surrogate"], _raw(corpus), key="another key, also not a secret", progress=False)
    with pytest.raises(ConfigMismatchError, match="written with a key"):
        audit(small["surrogate"], _raw(corpus), progress=False)


def test_store_without_recorded_configuration(tmp_path: Path) -> None:
    """A plain store is audited, not refused (tests/test_audit_plain.py); it needs documents."""
    client = chromadb.PersistentClient(path=str(tmp_path / "plain"))
    client.create_collection("docs", embedding_function=None).add(ids=["a", "b"], embeddings=[[0.1, 0.2], [0.3, 0.1]])
    with pytest.raises(InvalidParameterError, match="keeps no document text"):
        audit(tmp_path / "plain", progress=False)
    with pytest.raises(InvalidParameterError, match="at least 10"):
        audit(tmp_path / "plain", {"a": "x", "b": "y"}, progress=False)
    with pytest.raises(InvalidParameterError, match="store"):
        audit(tmp_path / "missing", {"a": "x"}, progress=False)


@needs_pii
def test_coverage_and_cache_outside_the_store(small: dict[str, Path], corpus: Any, tmp_path: Path) -> None:
    stores = small
    raw = dict(list(_raw(corpus).items())[:50])
    raw["not-in-store"] = "Maria Lopez flew to Madrid."
    before = _hashes(stores["none"])
    rep = audit(stores["none"], raw, attackers={"prior": {}}, clean_baseline=False, progress=False,
                cache_dir=tmp_path / "cache")
    assert _hashes(stores["none"]) == before
    assert rep["coverage"] == {"stored": SMALL, "raw": 51, "audited": 50, "raw_not_in_store": 1,
                               "store_not_in_raw": SMALL - 50, "sampled": 50}
    cached = list((tmp_path / "cache").glob("*"))
    assert cached and all(b"Maria" not in p.read_bytes() for p in cached)
    with pytest.raises(InvalidParameterError, match="cache_dir"):
        audit(stores["none"], raw, cache_dir=stores["none"] / "cache", progress=False)


@needs_pii
def test_faiss_and_langchain_stores(tmp_path: Path, corpus: Any) -> None:
    pytest.importorskip("faiss")
    from private_vectors.integrations.faiss import PrivateFaissIndex

    raw = dict(list(_raw(corpus).items())[:40])
    index = PrivateFaissIndex(_embedding("redact"))
    ids = index.add_texts(list(raw.values()))
    index.save(tmp_path / "faiss")
    by_int = {str(i): t for i, t in zip(ids, raw.values(), strict=True)}
    rep = audit(tmp_path / "faiss", by_int, attackers={"prior": {}}, clean_baseline=False, progress=False)
    assert rep["store"]["kind"] == "faiss" and rep["coverage"]["audited"] == 40
    assert rep["residual_pii"]["documents_with_text"] == 40
    pytest.importorskip("langchain_chroma")
    from private_vectors.langchain import Chroma

    Chroma(embedding_function=_embedding("redact"), persist_directory=str(tmp_path / "lc")).add_texts(
        list(raw.values()), ids=list(raw))
    rep = audit(tmp_path / "lc", raw, kind="langchain", attackers={"prior": {}}, clean_baseline=False,
                progress=False)
    assert rep["coverage"]["audited"] == 40 and rep["residual_pii"]["documents_with_text"] == 40


@needs_pii
def test_cli_writes_json_summary_and_plot(small: dict[str, Path], corpus: Any, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    stores = small
    from private_vectors.cli import main

    raw_file = tmp_path / "raw.jsonl"
    raw_file.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in _raw(corpus).items()))
    code = main(["audit", str(stores["none"]), "--raw", str(raw_file), "--out", str(tmp_path / "out"),
                 "--no-progress", "--quick", "--no-clean-baseline", "--attackers", "nn,prior"])
    assert code == 0
    assert "Names can" in capsys.readouterr().out
    for f in ("audit.json", "audit.md", "audit.png"):
        assert (tmp_path / "out" / f).stat().st_size > 0
    assert main(["audit", str(stores["surrogate"]), "--raw", str(raw_file), "--no-progress",
                 "--key-env", "PV_AUDIT_TEST_UNSET"]) == 2
    assert "written with a key" in capsys.readouterr().err
    monkeypatch.setenv("PV_AUDIT_TEST_KEY", KEY)
    assert main(["audit", str(stores["surrogate"]), "--raw", str(raw_file), "--no-progress", "--json",
                 "--key-env", "PV_AUDIT_TEST_KEY", "--attackers", "prior", "--no-clean-baseline"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed)["store"]["protection"]["keyed"] and KEY not in printed


# --------------------------------------------------------------------------- the name measure
def test_name_parts_and_scorer() -> None:
    assert name_parts(["Maria Lopez", "Dr. John A. Smith", "Maria Lopez", "Cher"]) == [("maria", "lopez"),
                                                                                        ("john", "smith")]

    class Guesser:
        def __init__(self, probs: list[dict[str, float]]) -> None:
            self.probs = probs

        def _truth_probabilities(self, vectors: np.ndarray, rows: list[list[str]]) -> list[dict[str, float]]:
            return self.probs

    tokens = [["maria", "lopez", "madrid"], ["john", "smith"]]
    names = [[("maria", "lopez")], [("john", "smith")]]
    score = name_scorer(tokens, names)
    # doc 0: top-3 = maria, madrid, x -> first only; doc 1: top-2 = john, smith -> full
    got = score(Guesser([{"maria": .9, "madrid": .8, "x": .7, "lopez": .1}, {"john": .5, "smith": .4}]),
                np.zeros((2, 2)), np.array([0, 1]))
    assert got == {"names_first": 1.0, "names_last": 0.5, "names_full": 0.5, "names_parts": 0.75, "names_n": 2.0}
    assert score(Guesser([{}]), np.zeros((1, 2)), np.array([0]))["names_parts"] == 0.0
    assert math.isnan(name_scorer([["madrid"]], [[]])(Guesser([{"madrid": 1.0}]), np.zeros((1, 2)),
                                                      np.array([0]))["names_full"])


def test_heap_bytes_in_chroma_index_files_are_reported(tmp_path: Path, corpus: Any) -> None:
    from private_vectors.eval.audit import summary_text
    from private_vectors.integrations.chroma_files import read_header, vector_segments

    raw = dict(list(_raw(corpus).items())[:30])
    folder = _write_chroma(tmp_path / "db", "redact", raw)
    clean = audit(folder, raw, attackers={"prior": {}}, clean_baseline=False, progress=False)
    assert clean["index_files"]["segments"] >= 1 and clean["index_files"]["heap_bytes"] == 0
    segment = vector_segments(folder)[0]
    header = read_header(segment)
    with open(segment / "data_level0.bin", "r+b") as fh:  # what a dirty heap leaves past the elements
        fh.seek(header.level0_written)
        fh.write(b"Maria Lopez, maria.lopez@example.org")
    dirty = audit(folder, raw, attackers={"prior": {}}, clean_baseline=False, progress=False)
    files = dirty["index_files"]
    assert files["heap_bytes"] == len(b"Maria Lopez, maria.lopez@example.org") and files["segments_with_heap_bytes"] == 1
    assert files["collections"]["docs"] == files["heap_bytes"]
    assert "scrub_index_files" in summary_text(dirty)
