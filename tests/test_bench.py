"""Harness end to end in a tiny config with the fake encoder, plus store read-back and report logic."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from private_vectors.encoders import FakeEncoder
from private_vectors.eval import CachingEncoder, run_benchmark
from private_vectors.eval.report import _interp_leakage, equal_utility
from private_vectors.eval.runner import grid, prior_based
from private_vectors.eval.store import VectorStore

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data/ beside the project root (benchmarks/README.md: Set-up); not present")


def _embedding(mechanism: str = "none", eps: float = 10.0):
    from private_vectors import PrivateEmbedding

    return PrivateEmbedding(model=FakeEncoder(dim=32), mechanism=mechanism, eps=eps, random_state=0,
                            query_transform="none")


@pytest.mark.parametrize("backend", ["chroma", "faiss"])
def test_store_read_back_and_search(backend):
    pytest.importorskip("chromadb" if backend == "chroma" else "faiss")
    texts = ["alpha beta", "gamma delta", "epsilon zeta", "alpha gamma"]
    ids = [f"d{i}" for i in range(4)]
    store = VectorStore(_embedding("none"), backend)
    store.add(ids, texts)
    back = store.vectors(["d2", "d0"])
    np.testing.assert_allclose(back, FakeEncoder(dim=32).encode([texts[2], texts[0]]), atol=1e-5)
    hits = store.search(["gamma delta"], 2)[0]
    assert next(iter(sorted(hits, key=hits.get, reverse=True))) == "d1"
    store.close()
    noisy = VectorStore(_embedding("laplace", 5.0), backend)
    noisy.add(ids, texts)
    diff = np.linalg.norm(noisy.vectors(ids) - FakeEncoder(dim=32).encode(texts), axis=1)
    assert np.all(diff > 0.1)  # what the store holds is perturbed
    noisy.close()


def test_caching_encoder_encodes_once(tmp_path):
    enc = CachingEncoder(FakeEncoder(dim=16), cache_dir=tmp_path)
    enc.warm(["a b", "c d", "a b"])
    assert enc.encoded == 2
    np.testing.assert_allclose(enc.encode(["c d"]), FakeEncoder(dim=16).encode(["c d"]))
    assert enc.encoded == 2
    again = CachingEncoder(FakeEncoder(dim=16), cache_dir=tmp_path)
    again.warm(["a b", "c d"])
    assert again.encoded == 0 and list(tmp_path.glob("*.npy"))
    assert not list(tmp_path.glob("*.tmp"))  # written through a temporary file and a rename


def test_caching_encoder_failed_write_leaves_no_cache_file(tmp_path, monkeypatch):
    def broken_save(fh, X):
        fh.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(np, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        CachingEncoder(FakeEncoder(dim=16), cache_dir=tmp_path).warm(["a b"])
    assert list(tmp_path.iterdir()) == []  # no truncated .npy for the next run to load


def test_grid_and_interpolation():
    cfg = {"mechanisms": ["none", "laplace"], "epsilons": [5, "inf"]}
    assert grid(cfg) == [("none", math.inf), ("laplace", 5.0)]
    assert _interp_leakage([(0.2, 0.1), (0.6, 0.5)], 0.4) == pytest.approx(0.3)
    assert math.isnan(_interp_leakage([(0.2, 0.1), (0.6, 0.5)], 0.9))
    lines = [{"dataset": "x", "mechanism": "laplace", "eps": e, "utility": u, "leakage_mlc": lk}
             for e, u, lk in [(5, 0.2, 0.1), (10, 0.4, 0.3), (20, 0.6, 0.5)]]
    lines += [{"dataset": "x", "mechanism": "m", "eps": e, "utility": u, "leakage_mlc": lk}
              for e, u, lk in [(5, 0.3, 0.05), (10, 0.5, 0.15)]]
    rows = {r["mechanism"]: r for r in equal_utility(lines)}
    assert rows["laplace"]["ratio"] == pytest.approx(1.0)
    assert rows["m"]["leakage"] == pytest.approx(0.10) and rows["m"]["ratio"] == pytest.approx(1 / 3)
    assert math.isnan(rows["m"]["excess_ratio"])  # no prior attacker in these lines
    # with a no-vector prior at 0.06: Laplace adds 0.24 above it, m adds 0.04 → 1/6
    prior_lines = [{**r, "leakage_prior": 0.06} for r in lines]
    rows = {r["mechanism"]: r for r in equal_utility(prior_lines) if r["attacker"] == "mlc"}
    assert rows["m"]["excess_ratio"] == pytest.approx(0.04 / 0.24)
    assert rows["laplace"]["excess_ratio"] == pytest.approx(1.0)
    # Laplace barely above the prior: nothing to rank, so no excess ratio
    flat = [{**r, "leakage_prior": r["leakage_mlc"] - 0.005} for r in lines if r["mechanism"] == "laplace"]
    assert all(math.isnan(r["excess_ratio"]) for r in equal_utility(flat))
    # leakage net of the prior is reported for every attacker (nn too), not only prior-based ones
    named = [{**r, "prior_based": ["generative"]} for r in prior_lines]
    assert {r["mechanism"]: r["net_ratio"] for r in equal_utility(named) if r["attacker"] == "mlc"}["m"] == pytest.approx(0.04 / 0.24)
    assert prior_based({"attackers": {"mlc": {}, "nn": {}, "generative": {"prior_weight": 1.0}}}) == [
        "mlc", "generative"]
    assert prior_based({"attackers": {"mlc-enc": {}, "generative": {}}}) == ["mlc-enc"]


@needs_data
def test_harness_end_to_end_tiny(tmp_path):
    cfg = {
        "name": "tiny", "data_root": str(DATA), "seeds": [0], "epsilons": [5, 10, "inf"],
        "mechanisms": ["none", "laplace", "concept-subspace+qt"],
        "attackers": {"mlc": {"epochs": 2, "hidden": [32]}, "nn": {"k": 3}}, "pii": {"n": 80},
        "concept_fit": {"subspace": {"n_pairs": 200, "rank": 8}},
        "datasets": [
            {"name": "scifact", "kind": "retrieval", "path": "retrieval/scifact", "n_queries": 8, "n_docs": 60},
            {"name": "docpii", "kind": "retrieval", "path": "retrieval/scifact", "n_queries": 8, "n_docs": 60,
             "leakage": "pii-in-docs", "n_leak": 40},
            {"name": "sts12", "kind": "sts", "n_pairs": 40},
            {"name": "ddxplus", "kind": "ddxplus", "n": 80, "epsilons": [5, 7.5, 10, "inf"]},
        ],
    }
    lines_path = run_benchmark(cfg, tmp_path, progress=False, encoder=FakeEncoder(dim=32))
    lines = [json.loads(x) for x in lines_path.read_text().splitlines()]
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["skipped"] == {}
    # data sets × (clean + 2 mechanisms × 2 finite ε); Pri-DDXPlus has its own 3 finite ε
    assert len(lines) == 3 * (1 + 2 * 2) + (1 + 2 * 3)
    assert {r["eps"] for r in lines if r["dataset"] == "ddxplus"} == {5, 7.5, 10, "inf"}
    assert {r["leak_set"] for r in lines if r["dataset"] in ("scifact", "docpii")} == {"presidio-pii"}
    for r in lines:
        assert {"git_sha", "versions", "seed", "eps", "mechanism", "utility", "leakage_mlc", "confidence_nn"} <= set(r)
        assert -1 <= r["utility"] <= 1 and 0 <= r["leakage_nn"] <= 1
    by = {(r["dataset"], r["mechanism"], r["eps"]): r for r in lines}
    # the clean store leaks the symptom lists to the nearest-neighbour attacker; heavy noise cuts it
    assert by[("ddxplus", "none", "inf")]["leakage_nn"] > by[("ddxplus", "laplace", 5)]["leakage_nn"]
    assert by[("ddxplus", "none", "inf")]["utility"] > by[("ddxplus", "laplace", 5)]["utility"]
    table = (tmp_path / "table.md").read_text()
    assert "### scifact" in table and "concept-subspace+qt" in table
    assert "| sts12 | mlc |" in (tmp_path / "equal_utility.md").read_text()
    assert (tmp_path / "pareto_ddxplus.png").stat().st_size > 1000


@needs_data
def test_harness_attacker_restrictions_and_qt_reuse(tmp_path):
    cfg = {
        "name": "tiny-attackers", "data_root": str(DATA), "seeds": [0], "epsilons": [10, "inf"],
        "mechanisms": ["none", "laplace", "concept-subspace", "concept-subspace+qt"],
        "attackers": {
            "prior": {},
            "mlc-enc": {"epochs": 2, "hidden": [16], "mechanisms": ["concept-subspace"]},
            "generative": {"tokenizer": "word", "epochs": 1, "embedding_size": 8, "hidden_size": 16,
                           "n_samples": 2, "mechanisms": ["laplace"], "epsilons": [10]},
        },
        "concept_fit": {"subspace": {"n_pairs": 200, "rank": 8}},
        "datasets": [{"name": "ddxplus", "kind": "ddxplus", "n": 60}],
    }
    lines_path = run_benchmark(cfg, tmp_path, progress=False, encoder=FakeEncoder(dim=32))
    by = {r["mechanism"]: r for r in map(json.loads, lines_path.read_text().splitlines())}
    assert set(by) == {"none", "laplace", "concept-subspace", "concept-subspace+qt"}
    assert "leakage_generative" in by["laplace"] and "leakage_generative" not in by["none"]
    assert "leakage_mlc-enc" in by["concept-subspace"] and "leakage_mlc-enc" not in by["laplace"]
    # the +qt row stores the same vectors as its base row: its attack metrics are reused, and say so
    qt, base = by["concept-subspace+qt"], by["concept-subspace"]
    assert qt["attacks_from"] == "concept-subspace" and "attacks_from" not in base
    assert qt["leakage_mlc-enc"] == base["leakage_mlc-enc"] and qt["leakage_prior"] == base["leakage_prior"]
    assert qt["utility"] != base["utility"]
    # ... which rests on this: with the same seed, the +qt embedding stores the very same vectors
    from private_vectors.eval.runner import make_embedding

    enc = FakeEncoder(dim=32)
    docs = ["fever and cough since monday", "a rash on the left arm", "pain in the chest"]
    stored = [make_embedding(m, 10.0, 3, enc, "medical", cfg).embed_documents(docs)
              for m in ("concept-subspace", "concept-subspace+qt")]
    np.testing.assert_array_equal(np.asarray(stored[0]), np.asarray(stored[1]))
    assert "generative" in (tmp_path / "table.md").read_text()


def test_harness_rejects_unknown_attacker():
    from private_vectors.eval.runner import build_attackers

    with pytest.raises(ValueError, match="attackers"):
        build_attackers({"attackers": {"mlp": {}}})


def test_adaptive_attack_takes_the_best_view():
    from private_vectors.eval.attacks import NearestNeighbourAttacker
    from private_vectors.eval.tasks import attack

    # the token is readable from dims 0-1; dims 2-41 carry loud noise that hides it from a
    # cosine nearest neighbour, unless the attacker projects those dims out first
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, size=400)
    centers = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], dtype=np.float32)
    X = np.hstack([centers[labels], 5 * rng.normal(size=(400, 40))]).astype(np.float32)
    tokens = [[f"t{k}"] for k in labels]

    class DropNoise:
        def apply(self, V):
            V = np.array(V, copy=True)
            V[:, 2:] = 0
            return V

    make = {"nn": lambda seed: NearestNeighbourAttacker(k=3)}
    plain = attack(X, tokens, make, seed=0)
    adaptive = attack(X, tokens, make, seed=0, transforms={"project": DropNoise()})
    assert "attack_variants" not in plain
    v = adaptive["attack_variants"]
    # the view is chosen on the attacker's validation split, then refitted on all its training data
    assert v["nn@project"]["val_leakage"] > v["nn@raw"]["val_leakage"] + 0.3
    assert adaptive["view_nn"] == "project"
    assert adaptive["leakage_nn"] > 0.95 > plain["leakage_nn"] + 0.3


def test_adaptive_transforms_only_for_a_noise_covariance():
    from private_vectors.eval.runner import adaptive_transforms, make_embedding

    enc = FakeEncoder(dim=32)
    cfg = {"concept_fit": {"subspace": {"n_pairs": 200, "rank": 8}}}
    assert adaptive_transforms(make_embedding("laplace", 10.0, 0, enc, "PII", cfg), cfg) == {}
    concept = make_embedding("concept-subspace", 10.0, 0, enc, "PII", cfg)
    assert set(adaptive_transforms(concept, cfg)) == {"project", "wiener"}
    assert adaptive_transforms(concept, {**cfg, "adaptive_attackers": False}) == {}


def test_insert_pii_puts_a_sentence_in_every_relevant_document():
    from private_vectors.eval.datasets import RetrievalDataset, SensitiveDataset
    from private_vectors.eval.runner import insert_pii

    corpus = {f"d{i}": f"document {i} about topic {i % 3}" for i in range(12)}
    ds = RetrievalDataset("toy", corpus, {"q1": "topic 1", "q2": "topic 2"},
                          {"q1": {"d1": 1, "d4": 0}, "q2": {"d2": 2}})
    pii = SensitiveDataset("p", [f"Call Ann{i} on 555-01{i:02d}" for i in range(8)],
                           [[f"ann{i}", f"555-01{i:02d}"] for i in range(8)], "spans")
    new, leak, ids = insert_pii(ds, pii, n_leak=5, seed=3)
    assert ids[:2] == ["d1", "d2"] and len(set(ids)) == 5  # the relevant ones (relevance > 0) first
    assert "d4" not in ids[:2] and new.queries == ds.queries and new.qrels == ds.qrels
    for doc, text, toks in zip(ids, leak.data.texts, leak.data.tokens, strict=True):
        assert new.corpus[doc] == text and text.endswith(corpus[doc]) and text != corpus[doc]
        j = int(toks[0][3:])
        assert text.startswith(pii.texts[j]) and toks == pii.tokens[j]  # prepended, tokens its own
    assert len({t[0] for t in leak.data.tokens}) == 5  # a different sentence per carrier
    assert all(new.corpus[d] == corpus[d] for d in corpus if d not in ids)
    with pytest.raises(ValueError, match="n_leak"):
        insert_pii(ds, pii, n_leak=1, seed=0)  # fewer than the relevant documents
    with pytest.raises(ValueError, match="n_leak"):
        insert_pii(ds, pii, n_leak=9, seed=0)  # more than the PII sentences


def test_grid_takes_each_data_sets_own_epsilons():
    from private_vectors.eval.runner import _task_runs
    from private_vectors.eval.tasks import Task

    cfg = {"mechanisms": ["none", "laplace"], "epsilons": [5, 10, "inf"],
           "datasets": [{"name": "a"}, {"name": "ddx", "epsilons": [2.5, 10, 12.5, "inf"]}]}
    assert grid(cfg) == [("none", math.inf), ("laplace", 5.0), ("laplace", 10.0), ("laplace", 2.5),
                         ("laplace", 12.5)]
    plain, dense = Task("a", "sts", "pearson"), Task("ddx", "ddxplus", "ndcg", meta={"epsilons": {2.5, 10.0, 12.5}})
    cfg_eps = {5.0, 10.0, math.inf}
    assert [e for _, e in grid(cfg) if _task_runs(plain, e, cfg_eps)] == [math.inf, 5.0, 10.0]
    assert [e for _, e in grid(cfg) if _task_runs(dense, e, cfg_eps)] == [10.0, 2.5, 12.5]
    few = Task("a", "sts", "pearson", meta={"mechanisms": {"laplace"}})
    assert [(m, e) for m, e in grid(cfg) if _task_runs(few, e, cfg_eps, m)] == [("laplace", 5.0), ("laplace", 10.0)]


def test_a_row_runs_its_own_epsilons_on_a_data_set():
    from private_vectors.eval.runner import _task_runs
    from private_vectors.eval.tasks import Task

    cfg = {"mechanisms": ["laplace", "cape"], "epsilons": [5, 10],
           "datasets": [{"name": "a", "row_epsilons": {"cape": [10, 1000]}}]}
    assert grid(cfg) == [("laplace", 5.0), ("laplace", 10.0), ("laplace", 1000.0),
                         ("cape", 5.0), ("cape", 10.0), ("cape", 1000.0)]
    task = Task("a", "sts", "pearson", meta={"row_epsilons": {"cape": {10.0, 1000.0}}})
    runs = [(m, e) for m, e in grid(cfg) if _task_runs(task, e, {5.0, 10.0}, m)]
    assert runs == [("laplace", 5.0), ("laplace", 10.0), ("cape", 10.0), ("cape", 1000.0)]


def test_report_names_shared_leakage_sets():
    from private_vectors.eval.report import leakage_sets, leakage_sets_markdown

    lines = [{"dataset": d, "leak_set": s} for d, s in
             [("scifact", "presidio-pii"), ("nfcorpus", "presidio-pii"), ("sts12", "sts12"), ("scifact", "presidio-pii")]]
    assert leakage_sets(lines) == {"presidio-pii": ["nfcorpus", "scifact"], "sts12": ["sts12"]}
    text = leakage_sets_markdown(lines)
    assert "2 distinct leakage set" in text and "nfcorpus, scifact share the presidio-pii" in text
    assert leakage_sets_markdown([{"dataset": "x"}]) == ""  # lines from before the key: nothing claimed


def test_cli_selects_data_sets():
    from private_vectors.eval.cli import _select_datasets

    cfg = {"datasets": [{"name": "scifact"}, {"name": "sts12"}, {"name": "ddxplus"}]}
    assert [d["name"] for d in _select_datasets(cfg, "ddxplus, scifact")] == ["scifact", "ddxplus"]
    with pytest.raises(SystemExit, match="nfcorpus"):
        _select_datasets(cfg, "nfcorpus")


def test_leak_set_is_not_read_as_an_attacker():
    from private_vectors.eval.report import _attackers

    assert _attackers([{"dataset": "x", "leak_set": "presidio-pii", "leakage_nn": 0.1}]) == ["nn"]


def test_keyed_rows_use_the_public_seed_derived_salt():
    from private_vectors.eval.runner import bench_salt, make_embedding

    enc = FakeEncoder(dim=32)
    vecs, salts = [], []
    for _ in range(2):  # two builds stand for two processes: the salt no longer comes from the OS
        ef = make_embedding("redact+laplace", 10.0, 3, enc, "medical", {})
        salts.append(ef.get_config()["key_salt"])  # a store records the config first, as the harness's does
        vecs.append(ef.pipeline.embed_sanitized(["a plain sentence with no names", "another one"]))
    assert salts == [bench_salt(3).hex()] * 2
    np.testing.assert_array_equal(vecs[0], vecs[1])
    aux = make_embedding("redact+laplace", 10.0, 3, enc, "medical", {}, key_role="aux")
    assert aux.get_config()["key_salt"] == bench_salt(3, "aux").hex() != salts[0]
    assert bench_salt(4) != bench_salt(3)


def test_store_search_breadth_is_configurable():
    pytest.importorskip("chromadb")
    store = VectorStore(_embedding("none"), "chroma", ef_search=1000)
    assert store._col.configuration_json["hnsw"]["ef_search"] == 1000
    store.close()
    with pytest.raises(ValueError, match="ef_search"):
        run_benchmark({"mechanisms": ["none"], "epsilons": ["inf"], "datasets": [], "ef_search": "high"},
                      "unused", encoder=FakeEncoder(dim=8))
