"""Leakage for what the store keeps: the attacker who reads the store's clear text, scored on the
vector attackers' victim split, beside them in every results line (FakeEncoder stores)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from private_vectors.encoders import FakeEncoder
from private_vectors.eval.datasets import SensitiveDataset
from private_vectors.eval.readable import readable_words, text_reader
from private_vectors.eval.tasks import LeakageSet, Task, attack, victim_split

pytest.importorskip("chromadb")

SENTENCES = [
    ("Call Maria Lopez at 555-0142 about the invoice.", ["Maria", "Lopez", "555-0142"]),
    ("Jonas Berg lives at 15 Elm Street, Oslo.", ["Jonas", "Berg", "15", "Elm", "Oslo"]),
    ("Write to anna.kowalska@example.org before Friday.", ["anna.kowalska@example.org"]),
    ("Peter Novak, 34, moved to Brno.", ["Peter", "Novak", "34", "Brno"]),
    ("The meeting with Sofia Rossi is in Turin.", ["Sofia", "Rossi", "Turin"]),
    ("Ahmed Khan paid with card 4111 1111 1111 1111.", ["Ahmed", "Khan", "4111", "1111", "1111", "1111"]),
    ("Lena Fischer was born in Graz in 1988.", ["Lena", "Fischer", "Graz", "1988"]),
    ("Ask Tomás Silva in Porto for the keys.", ["Tomás", "Silva", "Porto"]),
    ("Olga Ivanova's phone is 020 7946 0958.", ["Olga", "Ivanova's", "020", "7946", "0958"]),
    ("Kenji Sato flew from Osaka to Lyon.", ["Kenji", "Sato", "Osaka", "Lyon"]),
]


def test_readable_words_normalise_as_the_attackers_do() -> None:
    assert readable_words("Maria LOPEZ, at 555-0142.") == {"maria", "lopez", "at", "555-0142"}
    assert readable_words(None) == set() and readable_words("") == set()


def test_text_reader_counts_token_instances_of_the_victims() -> None:
    tokens = [["Maria", "Lopez", "Madrid"], ["John", "Smith"], ["Oslo", "Oslo"]]
    kept = ["<PERSON> Lopez flew to <LOCATION>.", None, "oslo and OSLO"]
    got = text_reader(tokens, kept, [0, 1, 2])
    assert got["leakage_text"] == pytest.approx(3 / 7)  # lopez + oslo twice, of 7 instances
    assert got["text_docs_readable"] == pytest.approx(2 / 3)
    assert text_reader(tokens, kept, [1])["leakage_text"] == 0.0
    assert math.isnan(text_reader([[]], ["x"], [0])["leakage_text"])
    with pytest.raises(ValueError, match="kept"):
        text_reader(tokens, kept[:2], [0])


def test_victim_split_is_the_attack_split() -> None:
    groups = [0, 0, 1, 2, 3, 3, 4, 5, 6, 7]
    tr, te = victim_split(10, seed=3, train_share=0.7, groups=groups)
    seen: dict[str, np.ndarray] = {}

    class Spy:
        def __init__(self, seed: int) -> None:
            pass

        def fit(self, V: np.ndarray, tokens: list[list[str]]) -> None:
            seen["train"] = V[:, 0].astype(int)

        def evaluate(self, V: np.ndarray, tokens: list[list[str]]) -> dict[str, float]:
            seen["test"] = V[:, 0].astype(int)
            return {"leakage": 0.0, "confidence": 0.0}

    V = np.arange(10, dtype=np.float32)[:, None].repeat(2, axis=1)
    attack(V, [["a"]] * 10, {"spy": Spy}, seed=3, groups=groups)
    assert list(seen["train"]) == list(tr) and list(seen["test"]) == list(te)


KEPT = ["invoice", "lives", "Write", "moved", "meeting", "paid", "born", "Ask", "phone", "flew"]
"""One ordinary word per sentence, planted among its sensitive tokens: no text stage replaces it, so
the reader must find it in every stored text."""


def _task() -> Task:
    texts = [t for t, _ in SENTENCES] * 2  # twenty documents
    tokens = [[*k, w] for (_, k), w in zip(SENTENCES, KEPT, strict=True)] * 2
    leak = LeakageSet("handmade", SensitiveDataset("handmade", texts, tokens, "spans", masked_texts=texts))
    return Task("handmade", "ddxplus", "ndcg@10", leakage=leak, leakage_in_store=False)


def _embedding(sanitize: str | None):
    from private_vectors import PrivateEmbedding

    return PrivateEmbedding(model=FakeEncoder(dim=32), mechanism="laplace", eps=10, random_state=0,
                            query_transform="none", sanitize=sanitize)


def test_a_store_without_text_gives_the_reader_nothing_and_raw_text_gives_it_everything() -> None:
    task = _task()
    bare = task.run(_embedding(None), {}, seed=0)
    assert bare["leakage_text"] == 0.0 and bare["text_docs_readable"] == 0.0  # no text stage: no text stored
    raw = task.run(_embedding(None), {}, seed=0, doc_transform=lambda ts: list(ts))  # text kept as given
    assert raw["leakage_text"] == 1.0


def test_a_sanitized_store_is_read_as_it_is_stored() -> None:
    task = _task()
    ef = _embedding("redact")
    got = task.run(ef, {}, seed=0)
    stored = list(ef.sanitize_documents(task.leakage.data.texts))  # what the store keeps in clear
    _, te = victim_split(len(stored), seed=0, groups=task.leakage.split_groups())
    want = [t.lower().strip(".,'") in readable_words(stored[i]) for i in te for t in task.leakage.data.tokens[i]]
    assert got["leakage_text"] == pytest.approx(np.mean(want))
    assert 0 < got["leakage_text"] < 0.5  # the planted words are read; the text stage removed most others
    assert got["text_docs_readable"] == 1.0


def _line(mech: str, eps: Any, stage: str | None, utility: float, store: str = "clear", **leak: float) -> dict[str, Any]:
    noise = None if eps == "inf" else "laplace"
    return {"dataset": "d", "mechanism": mech, "eps": eps, "seed": 0, "store": store, "utility": utility,
            "stages": {"text": stage, "erasure": None, "noise": noise, "query_transform": None},
            **{f"leakage_{k}": v for k, v in leak.items()}}


def test_store_leakage_is_the_strongest_reader_of_what_the_store_keeps() -> None:
    from private_vectors.eval.report import ablation_markdown, table_markdown
    from private_vectors.eval.store_report import store_kinds, store_kinds_markdown

    red, pres = "redact (project, keyed)", "presidio"
    lines = [
        _line("redact", "inf", red, 0.68, text=0.08, mlc=0.03, prior=0.02),
        _line("redact+laplace", 10, red, 0.44, text=0.08, mlc=0.025, prior=0.02),
        _line("redact+laplace", 10, red, 0.60, store="sealed", text=0.0, mlc=0.025, prior=0.02),
        _line("presidio", "inf", pres, 0.67, text=0.20, mlc=0.06, prior=0.02),
        _line("presidio+laplace", 10, pres, 0.45, text=0.20, mlc=0.03, prior=0.02),
        _line("laplace", 10, None, 0.47, text=0.0, mlc=0.035, prior=0.02),
    ]
    rows = {(r["row"], r["store_kind"], r["eps"]): r for r in store_kinds(lines)}
    clear = rows[("redact+laplace", "clear", 10.0)]
    assert clear["store"] == pytest.approx(0.08) and clear["reencoded"] == pytest.approx(0.03)  # read, at every ε
    assert clear["anchor"] == pytest.approx(0.20) and clear["ratio"] == pytest.approx(0.4)
    sealed = rows[("redact+laplace", "sealed", 10.0)]
    assert sealed["store"] == pytest.approx(0.025) and sealed["vector_attacker"] == "mlc"  # the prior is no reader
    assert math.isnan(sealed["reencoded"]) and sealed["utility"] == pytest.approx(0.60)
    assert sealed["ratio"] == pytest.approx(0.025 / 0.20)
    bare = rows[("laplace", "clear", 10.0)]
    assert bare["store"] == pytest.approx(0.035) and math.isnan(bare["reencoded"])  # no text to re-encode
    assert rows[("presidio", "clear", math.inf)]["ratio"] == pytest.approx(1.0)
    old = [{k: v for k, v in r.items() if k not in ("leakage_text", "store")} for r in lines[:2]]
    assert math.isnan(store_kinds(old)[0]["store"])  # lines from before the reader: not claimed
    md = store_kinds_markdown(lines)
    assert "| redact+laplace | sealed | 10 | 60.00 | 0.00 | 2.50 (mlc) | – | **2.50** | 20.00 | 0.12× |" in md
    assert "redact+laplace (sealed)" in table_markdown(lines) and "redact+laplace (sealed)" in ablation_markdown(lines)


# --------------------------------------------------------------------------- the sealed store kind
KEY = "store-leakage test key, not a secret"


def _keyed(seal: bool, eps: float = 10.0):
    from private_vectors import PrivateEmbedding

    return PrivateEmbedding(model=FakeEncoder(dim=32), mechanism="laplace", eps=eps, random_state=0,
                            query_transform="none", sanitize="redact", key=KEY, key_salt=b"store-leak-salt!",
                            seal=seal)


def test_a_sealed_store_keeps_the_clear_stores_vectors_and_nothing_readable() -> None:
    from private_vectors.eval.sealed_store import SealedStore
    from private_vectors.eval.store import VectorStore
    from private_vectors.sealed import SEALED_KEY

    texts = [t for t, _ in SENTENCES]
    ids = [f"d{i}" for i in range(len(texts))]
    clear, sealed = VectorStore(_keyed(False)), SealedStore(_keyed(True))
    clear.add(ids, texts)
    sealed.add(ids, texts)
    np.testing.assert_array_equal(clear.vectors(ids), sealed.vectors(ids))  # same key, same keyed noise
    readable = sealed.stored_texts(ids)
    assert all(r.startswith("pv-sealed:") for r in readable)
    assert not any(w in r for r in readable for w in ("meeting", "invoice", "Friday"))
    got = sealed._col.get(ids=ids[:1], include=["metadatas"])["metadatas"][0]
    assert set(got) == {SEALED_KEY} and got[SEALED_KEY].startswith("pvs1.")
    hits = sealed.search(["The meeting is in a city."], 3)[0]
    assert len(hits) == 3 and sealed.candidates == len(texts)  # K = min(n, max(10 k, 200)) here
    exact = sealed.embedding.pipeline.embed_sanitized(sealed.embedding.sanitize_documents(texts), exact=True)[1]
    _, clean = sealed.embedding.pipeline.embed_queries(["The meeting is in a city."], exact=True)
    cos = exact @ clean[0] / (np.linalg.norm(exact, axis=1) * np.linalg.norm(clean[0]))
    assert list(hits) == [ids[j] for j in np.argsort(-cos)[:3]]  # the key holder ranks by the exact vectors
    sealed.close()
    clear.close()


def test_the_grid_writes_both_store_kinds_and_reuses_the_attacks(tmp_path: Any) -> None:
    from private_vectors.eval.runner import _GridRun, build_attackers
    from private_vectors.eval.store_report import store_kinds

    task = _task()
    task.meta.update({"concept": "PII", "token_source": "spans", "leak_set": "handmade"})
    enc = FakeEncoder(dim=32)
    cfg = {"attackers": {"nn": {"k": 3}, "prior": {}}}
    run = _GridRun(cfg, enc, build_attackers(cfg, enc), {"config": "t"}, 200)
    lines = [run.cell(task, "redact+laplace", 10.0, 0, "chroma", kind) for kind in ("clear", "sealed")]
    clear, sealed = lines
    assert clear["store"] == "clear" and sealed["store"] == "sealed" and sealed["attacks_from"] == "clear"
    assert sealed["leak_vectors_sha256"] == clear["leak_vectors_sha256"]
    assert sealed["leakage_nn"] == clear["leakage_nn"] and sealed["leakage_text"] == 0.0 < clear["leakage_text"]
    assert sealed["candidates"] == 20 and 0 <= sealed["utility"] <= 1
    assert run.cell(task, "laplace", 10.0, 0, "chroma", "sealed") is None and "laplace/PII/sealed" in run.skipped
    rows = {r["store_kind"]: r for r in store_kinds(lines)}
    assert rows["sealed"]["store"] == pytest.approx(clear["leakage_nn"])  # the vectors are all it gives away
    assert rows["clear"]["store"] == pytest.approx(max(clear["leakage_text"], clear["leakage_nn"]))
