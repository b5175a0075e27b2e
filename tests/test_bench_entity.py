"""The harness's text-stage rows, the entity-retrieval task and its attackers (key-less,
frequency / linking). Small and fast: FakeEncoder; the data-backed tests skip when
../shared/data/pii is absent."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from private_vectors.encoders import FakeEncoder
from private_vectors.errors import InvalidParameterError
from private_vectors.eval import run_benchmark
from private_vectors.eval.linking import LinkingAttacker, zipf_frequencies
from private_vectors.eval.runner import (
    MECHANISM_SPECS,
    bench_key,
    grid,
    make_embedding,
    row_stages,
)
from private_vectors.eval.store import VectorStore, sanitize_once
from private_vectors.eval.tasks import attack

PII = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pii"
needs_pii = pytest.mark.skipif(
    not (PII / "templates.txt").is_file() or not (PII / "FakeNameGenerator.com_3000.csv").is_file(),
    reason="../shared/data/pii (templates.txt, FakeNameGenerator.com_3000.csv) not present")

TEXT_ROWS = ("redact", "redact+laplace", "redact+concept", "surrogate", "surrogate+laplace", "surrogate+concept")


# --------------------------------------------------------------------------- rows
def test_text_stage_rows_exist_and_show_their_stages() -> None:
    for row in TEXT_ROWS:
        st = row_stages(row)
        assert st["text"] == f"{row.split('+')[0]} (project, keyed)"
    assert row_stages("redact")["noise"] is None
    assert row_stages("surrogate+laplace")["noise"] == "laplace"
    assert row_stages("redact+concept")["noise"] == "mahalanobis (subspace)"
    assert row_stages("presidio+laplace")["text"] == "presidio"  # the anchor is not the project's stage
    assert row_stages("redact-model+laplace") == {"text": "redact (project, keyed, detector=model)", "erasure": None,
                                                  "noise": "laplace", "query_transform": None}
    # noiseless text rows run only at ε = ∞, the others only at finite ε
    cells = grid({"mechanisms": ["redact", "surrogate+laplace"], "epsilons": [10, "inf"]})
    assert cells == [("redact", math.inf), ("surrogate+laplace", 10.0)]


def test_text_row_embedding_is_keyed_per_seed_and_role() -> None:
    enc = FakeEncoder(dim=32)
    ef = make_embedding("surrogate+laplace", 10.0, 0, enc, "PII", {})
    assert ef.sanitizer is not None and ef.sanitizer.get_config()["policy"] == "surrogate"
    assert ef.store_geometry == "none" and ef.get_config()["sanitizer"]["keyed"] is True
    def kid(e):  # the key's identity: a keyed HMAC (the key check value has a salt per instance)
        return e.sanitizer.secret_fields({"tokens": ["probe"]})["tokens"]["hmac"]

    assert kid(make_embedding("surrogate+laplace", 5.0, 0, enc, "PII", {})) == kid(ef)
    assert kid(make_embedding("surrogate+laplace", 10.0, 1, enc, "PII", {})) != kid(ef)
    assert kid(make_embedding("surrogate+laplace", 10.0, 0, enc, "PII", {}, key_role="aux")) != kid(ef)
    assert bench_key(0) not in repr(ef) and bench_key(0) not in json.dumps(ef.get_config(), default=str)
    plain = make_embedding("laplace", 10.0, 0, enc, "PII", {})
    assert plain.sanitizer is None  # rows without a text stage are unchanged
    with pytest.raises(ValueError, match="role"):
        bench_key(0, "attacker")


def test_store_sanitizes_once_stores_sanitized_text_and_queries_use_the_same_key() -> None:
    enc = FakeEncoder(dim=32)
    ef = make_embedding("surrogate", math.inf, 0, enc, "PII", {})
    texts = ["Amelia Okafor ordered a lamp. Call her at 212-555-0147.", "The weather was mild in spring."]
    store = VectorStore(ef)
    try:
        store.add(["a", "b"], texts)
        stored = store.stored_texts(["a", "b"])
        assert "Okafor" not in (stored[0] or "") and stored[1] == texts[1]
        # the stored vector is the embedding of the stored (sanitized) text, not of the raw one
        np.testing.assert_allclose(store.vectors(["a"])[0], enc.encode([stored[0]])[0], atol=1e-5)
        # a query naming her goes through apply_queries with the same key: it finds her document
        hits = store.search(["What did Amelia Okafor order?"], 1)
        assert list(hits[0]) == ["a"]
    finally:
        store.close()
    none_store = VectorStore(make_embedding("none", math.inf, 0, enc, "PII", {}))
    try:
        none_store.add(["a"], texts[:1])
        assert none_store.stored_texts(["a"]) == [None]  # no text stage: no text kept
    finally:
        none_store.close()


def test_sanitize_memo_matches_a_fresh_sanitizer_and_restores_its_index() -> None:
    enc = FakeEncoder(dim=32)
    batch1 = ["Amelia Okafor flew to Lagos on Monday."]
    batch2 = ["amelia okafor wrote back."]
    ef1 = make_embedding("surrogate", math.inf, 3, enc, "PII", {})
    out1 = sanitize_once(ef1, batch1)
    state1 = ef1.pipeline.query_index_state()
    from private_vectors.eval.store import _chain_hash

    out2 = sanitize_once(ef1, batch2, _chain_hash("", batch1))
    ef2 = make_embedding("surrogate+laplace", 10.0, 3, enc, "PII", {})  # same sanitizer, memo hit
    assert sanitize_once(ef2, batch1) == out1
    assert ef2.pipeline.query_index_state()["entries"] == state1["entries"]  # the index as it was after batch1
    assert sanitize_once(ef2, batch2, _chain_hash("", batch1)) == out2
    fresh = make_embedding("surrogate", math.inf, 3, enc, "PII", {})
    assert fresh.sanitize_documents(batch1) == out1  # the memo returns what the sanitizer returns
    other = make_embedding("surrogate", math.inf, 4, enc, "PII", {})  # other key: no sharing
    assert sanitize_once(other, batch1) != out1


def test_attack_with_a_fixed_split_uses_it() -> None:
    rng = np.random.default_rng(0)
    V = rng.normal(size=(20, 8)).astype(np.float32)
    toks = [["alpha"] if i < 10 else ["beta"] for i in range(20)]
    from private_vectors.eval.attacks import PriorAttacker

    # the attacker side holds only "alpha": the prior attacker guesses alpha, victims are all beta
    out = attack(V, toks, {"prior": lambda s: PriorAttacker()}, seed=0,
                 split=(np.arange(10), np.arange(10, 20)))
    assert out["leakage_prior"] == 0.0
    out = attack(V, toks, {"prior": lambda s: PriorAttacker()}, seed=0,
                 split=(np.arange(10, 15), np.arange(15, 20)))
    assert out["leakage_prior"] == 1.0


# --------------------------------------------------------------------------- linking attacker
DIRECTORY = [
    {"name": "Amelia Okafor", "company": "Acme Robotics", "occupation": "Welder", "city": "Lagos"},
    {"name": "John Smith", "company": "Initech", "occupation": "Pilot", "city": "Austin"},
    {"name": "Mary Jones", "company": "Globex", "occupation": "Nurse", "city": "Denver"},
]


def test_linking_maps_consistent_pseudonyms_by_frequency_and_attributes() -> None:
    names = frozenset({"Hlo", "Gava", "Pet", "Kraus", "Ana", "Lind"})
    freq = [0.6, 0.3, 0.1]
    att = LinkingAttacker(names=names).fit(DIRECTORY, freq)
    # pseudonym "Hlo Gava" is the most frequent cluster; "Pet Kraus" carries Initech once
    texts = ["Hlo Gava called."] * 6 + ["Pet Kraus works at Initech.", "Pet Kraus again.", "Pet Kraus too.",
                                        "Ana Lind was here."]
    truth = [0] * 6 + [1, 1, 1, 2]
    res = att.evaluate(texts, truth)
    assert res["leakage"] == 1.0 and res["pseudonym_share"] == 1.0
    assert res["prior"] == pytest.approx(0.6)
    # without stored text the attacker has only its prior: the most frequent identity
    assert att.predict([None, None]) == [0, 0]
    # redacted text: a lone document is linked by the attributes the text stage left
    assert att.predict(["<PERSON> flies for Initech."]) == [1]
    # a pseudonym needs two consecutive name tokens
    assert att.pseudonym("Hlo went home") is None and att.pseudonym("Dear Hlo Gava, hi") == "Hlo Gava"


def test_linking_without_information_is_the_prior_and_params_are_checked() -> None:
    att = LinkingAttacker(names=frozenset()).fit(DIRECTORY, [1.0, 1.0, 2.0])
    truth = [0, 1, 2, 2]
    assert att.evaluate(["x"] * 4, truth)["leakage"] == att.prior_accuracy(truth) == 0.5
    with pytest.raises(InvalidParameterError, match="min_run"):
        LinkingAttacker(min_run=0)
    with pytest.raises(InvalidParameterError, match="fields"):
        LinkingAttacker(fields=["shoe size"])
    with pytest.raises(InvalidParameterError, match="frequencies"):
        LinkingAttacker().fit(DIRECTORY, [1.0])
    with pytest.raises(InvalidParameterError, match="attacker"):
        LinkingAttacker().predict(["x"])
    assert sum(zipf_frequencies(5, 1.0)) == pytest.approx(1.0)
    assert zipf_frequencies(3, 1.0)[0] == pytest.approx(1 / (1 + 1 / 2 + 1 / 3))


# --------------------------------------------------------------------------- the entity task
@needs_pii
def test_entity_task_end_to_end_tiny(tmp_path) -> None:
    cfg = {"name": "t", "data_root": str(PII.parent), "seeds": [0], "epsilons": [10, "inf"],
           "mechanisms": ["none", "redact", "surrogate+laplace"],
           "attackers": {"mlc": {"epochs": 2}, "nn": {"k": 3}, "prior": {}},
           "datasets": [{"name": "entity", "kind": "entity", "n_docs": 60, "n_identities": 25,
                         "n_person_queries": 12, "n_city_queries": 4,
                         "linking_variants": {"names": {"fields": ["name"]}}}]}
    lines = [json.loads(x) for x in run_benchmark(cfg, tmp_path, progress=False, encoder=FakeEncoder(dim=32))
             .read_text().splitlines()]
    by = {r["mechanism"]: r for r in lines}
    assert set(by) == {"none", "redact", "surrogate+laplace"}
    for r in lines:
        assert r["kind"] == "entity" and r["token_source"] == "spans"
        for k in ("utility", "utility_city", "utility_person_top1", "leakage_nn", "leakage_nn-keyless",
                  "leakage_mlc-keyless", "leakage_nn-docsplit", "leakage_linking", "leakage_linking-names",
                  "leakage_linking-prior"):
            assert 0.0 <= r[k] <= 1.0, (r["mechanism"], k)
        assert r["n_attacker_docs"] + r["n_victim_docs"] == 60
    # no stored text: the linking attacker is left with its frequency prior
    assert by["none"]["leakage_linking"] == by["none"]["leakage_linking-prior"]
    assert by["none"]["stored_raw_name_share"] == 0.0
    # consistent surrogates form pseudonym clusters the linker reads
    assert by["surrogate+laplace"]["linking_pseudonym_share"] > 0.5
    assert by["redact"]["stages"]["text"] == "redact (project, keyed)"
    assert {"mlc-keyless", "mlc-docsplit"} <= set(by["none"]["prior_based"])
    assert "linking-names" in (tmp_path / "entity.md").read_text()
    ablation = (tmp_path / "ablation.md").read_text()
    assert "redact (project, keyed)" in ablation and "surrogate (project, keyed)" in ablation


@needs_pii
def test_entity_split_is_by_identity_and_document() -> None:
    from private_vectors.eval.runner import _entity_task

    t = _entity_task(PII.parent, {"name": "entity", "n_docs": 80, "n_identities": 30}, 0)
    corpus = t.meta["entity"]
    sp = corpus.attacker_split(t.leakage.train_share, seed=1)
    assert not set(sp.attacker_identities) & set(sp.victim_identities)
    assert not set(sp.attacker_docs) & set(sp.victim_docs)
    assert len(sp.attacker_docs) + len(sp.victim_docs) == len(corpus.documents)
    assert t.leakage.split_groups() is not None and len(set(t.leakage.groups)) == len(corpus.identity_counts())
    assert "redact" in MECHANISM_SPECS and MECHANISM_SPECS["surrogate+concept"]["estimator"] == "subspace"


def test_entity_report_ratios_and_headline() -> None:
    from private_vectors.eval.entity_report import entity_markdown

    def line(mech, eps, seed, **kw):
        return {"dataset": "entity", "kind": "entity", "backend": "chroma", "mechanism": mech, "eps": eps,
                "seed": seed, "utility": kw.pop("u"), "utility_city": 0.1, "utility_person_top1": 0.2,
                "leakage_prior": 0.0, "leakage_prior-docsplit": 0.1, "leakage_nn": 0.01, "leakage_nn-docsplit": 0.3,
                "leakage_linking": kw.pop("link"), "leakage_linking-prior": 0.2, "stored_raw_name_share": 0.0, **kw}

    lines = [line("laplace", 10.0, s, u=0.5, link=0.2) for s in (0, 1)] + \
        [line("surrogate+laplace", 10.0, 0, u=0.4, link=0.9), line("surrogate+laplace", 10.0, 1, u=0.3, link=0.7)]
    md = entity_markdown(lines)
    assert "| surrogate+laplace | 10 | 0.350 | 0.70× (laplace) |" in md
    assert "linking: 80.0 (60.0 above baseline)" in md  # 0.8 − 0.2 beats nn-docsplit's 0.3 − 0.1
    assert "nn-docsplit: 30.0 (20.0 above baseline)" in md  # laplace: no pseudonyms, linking = baseline
    assert entity_markdown([{"kind": "retrieval"}]) == ""
