"""Loaders on the shared data (skipped when it is missing) and on hand-made files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from private_vectors.errors import ArtefactError
from private_vectors.eval.datasets import (
    fallback_sensitive_tokens,
    load_beir,
    load_ddxplus,
    load_presidio_pii,
    load_semeval_sts,
    load_sick,
    load_sts,
    load_stsb,
    sensitive_tokens,
    span_tokens,
)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data/ beside the project root (benchmarks/README.md: Set-up); not present")


@needs_data
def test_beir_scifact_counts_and_subset():
    ds = load_beir(DATA / "retrieval" / "scifact")
    assert len(ds.corpus) == 5183 and len(ds.queries) == 300
    assert sum(len(v) for v in ds.qrels.values()) == 339
    sub = ds.subset(n_queries=10, n_docs=100, seed=1)
    assert len(sub.queries) == 10 and len(sub.corpus) == 100
    for rel in sub.qrels.values():  # every judged document of a kept query is kept
        assert set(rel) <= set(sub.corpus)
    assert sub.subset(n_queries=10, n_docs=100, seed=1).corpus.keys() == sub.corpus.keys()


@needs_data
@pytest.mark.parametrize("name,n", [("stsb", 1379), ("sts12", 3108), ("sts16", 1186), ("sick", 4927)])
def test_sts_sets(name, n):
    ds = load_sts(name, DATA / "sts")
    assert len(ds) == n
    assert all(s1 and s2 for s1, s2 in zip(ds.sentences1[:50], ds.sentences2[:50], strict=True))
    assert min(ds.scores) >= 0 and max(ds.scores) <= 5


@needs_data
def test_presidio_and_ddxplus():
    pii = load_presidio_pii(DATA / "pii" / "synth_dataset_v2.json")
    assert len(pii) == 1500 and pii.token_source == "spans"
    for text, toks in zip(pii.texts[:100], pii.tokens[:100], strict=True):
        for t in toks:
            assert t in text
    ddx = load_ddxplus(DATA / "medical" / "pri-ddxplus")
    assert len(ddx) == 1549 and len(ddx.masked_texts) == 1549
    assert all(item in ddx.texts[0] for item in ddx.tokens[0])


def test_hand_made_files(tmp_path):
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text('{"_id": "d1", "title": "T", "text": "alpha"}\n'
                                       '{"_id": "d2", "title": "", "text": "beta"}\n')
    (root / "queries.jsonl").write_text('{"_id": "q1", "text": "a?"}\n{"_id": "q2", "text": "unjudged"}\n')
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\n")
    ds = load_beir(root)
    assert ds.corpus == {"d1": "T alpha", "d2": "beta"} and ds.queries == {"q1": "a?"}
    assert ds.qrels == {"q1": {"d1": 2}}
    sts = tmp_path / "sts"
    sts.mkdir()
    (sts / "STS.input.x.txt").write_text("a b\tc d\ne f\tg h\ni\tj\n")
    (sts / "STS.gs.x.txt").write_text("4.0\n\n1.5\n")  # the second pair is unscored
    (sts / "STS.gs.missing.txt").write_text("3\n")  # no input file: skipped
    got = load_semeval_sts(sts)
    assert got.sentences1 == ["a b", "i"] and got.scores == [4.0, 1.5]
    (tmp_path / "sts-test.csv").write_text("g\tf\ty\t1\t2.5\tone\ttwo\n")
    assert load_stsb(tmp_path / "sts-test.csv").scores == [2.5]
    (tmp_path / "sick.txt").write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\n1\tx\ty\t3.3\n")
    assert load_sick(tmp_path / "sick.txt").sentences2 == ["y"]
    lines = [{"question_init": "A has cough and fever.", "question_mask": "A has fever.",
              "symptoms": ["cough", "fever"], "antecedents": [], "symptoms_mask": ["cough"],
              "symptoms_remain": ["fever"], "antecedents_mask": []}]
    (tmp_path / "d.json").write_text("\n".join(json.dumps(r) for r in lines))
    # only the private items: "fever" stays in the masked query, so it is no secret
    assert load_ddxplus(tmp_path / "d.json").tokens == [["cough"]]
    assert load_ddxplus(tmp_path / "d.json", items=("symptoms",)).tokens == [["cough", "fever"]]
    with pytest.raises(ArtefactError):
        load_beir(tmp_path / "nowhere")


def test_fallback_tokens():
    text = "Yesterday Maria Lopez flew to Paris. Then she paid 42 euros on 3 May."
    assert fallback_sensitive_tokens(text) == ["Maria", "Lopez", "Paris", "42", "3", "May"]
    toks, method = sensitive_tokens([text], method="fallback")
    assert method == "fallback" and toks[0] == fallback_sensitive_tokens(text)
    assert span_tokens("John  O'Neil, 5th Ave.") == ["John", "O'Neil", "5th", "Ave"]
