"""Averaging attack: re-ingesting one text k ∈ {1, 4, 16} times.

Guarantee (issue 4 "Keyed noise", issue 6): with a key, the k stored copies of a text are
bit-identical, so an attacker who averages them gains nothing — its leakage is exactly the
k = 1 leakage. Without a key each copy carries fresh noise; averaging k copies shrinks the noise
by about 1/√k and leakage grows (measured on the default model in
benchmarks/averaging_attack.py → benchmarks/results/averaging_attack.md).

Fast: FakeEncoder (keyword hashing), a synthetic name + city corpus, copies ingested through a
persistent Chroma collection and read back with ``collection.get(include=["embeddings"])``; the
attacker is the nearest-neighbour inversion of :mod:`private_vectors.eval.attacks` fitted on an
auxiliary corpus perturbed the same way (it knows the mechanism and ε).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from _workers.counts import flush, record
from private_vectors import PrivateEmbedding
from private_vectors.eval.attacks import NearestNeighbourAttacker

chromadb = pytest.importorskip("chromadb")

FIRST = ["maria", "john", "aiko", "omar", "lena", "ravi", "chloe", "diego", "fatima", "igor", "nina", "tom"]
LAST = ["lopez", "smith", "tanaka", "haddad", "fischer", "patel", "martin", "silva", "khan", "petrov"]
CITIES = ["madrid", "springfield", "osaka", "cairo", "berlin", "pune", "lyon", "porto", "lahore", "kazan"]
TEMPLATES = ["{f} {l} moved to {c} last spring", "invoice for {f} {l} sent to the {c} office",
             "{f} {l} was admitted to the clinic in {c}", "please call {f} {l} about the {c} order"]
KS = (1, 4, 16)
EPS = 6.0


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    flush(__name__)


def synthetic(n: int, seed: int) -> tuple[list[str], list[list[str]]]:
    rng = np.random.default_rng(seed)
    texts, tokens = [], []
    for _ in range(n):
        f, last, c = rng.choice(FIRST), rng.choice(LAST), rng.choice(CITIES)
        texts.append(str(rng.choice(TEMPLATES)).format(f=f, l=last, c=c))
        tokens.append([f, last, c])
    return texts, tokens


@pytest.fixture(scope="module")
def corpora():
    aux = synthetic(800, seed=1)
    victims = synthetic(120, seed=2)
    return aux, victims


def ingest_copies(client, pe: PrivateEmbedding, texts: list[str], k: int) -> np.ndarray:
    """Ingest each text k times (distinct ids) into a persistent collection; returns (len, k, dim)."""
    col = client.create_collection(f"copies-{k}", embedding_function=pe)
    for j in range(k):  # k separate ingests of the whole corpus, as a re-ingesting application would
        col.add(ids=[f"v{i}-{j}" for i in range(len(texts))], documents=texts)
    got = col.get(include=["embeddings"])
    by_id = dict(zip(got["ids"], got["embeddings"], strict=True))
    record("documents ingested", len(by_id))
    return np.asarray([[by_id[f"v{i}-{j}"] for j in range(k)] for i in range(len(texts))], dtype=np.float64)


def leakage_by_k(tmp_path, pe: PrivateEmbedding, corpora, *, n_aux: int | None = None,
                 n_victims: int | None = None) -> tuple[dict[int, float], dict[int, np.ndarray]]:
    (aux_texts, aux_tokens), (victims, victim_tokens) = corpora
    aux_texts, aux_tokens = aux_texts[:n_aux], aux_tokens[:n_aux]
    victims, victim_tokens = victims[:n_victims], victim_tokens[:n_victims]
    attacker = NearestNeighbourAttacker(k=5).fit(pe.embed_array(aux_texts), aux_tokens)
    leak, copies = {}, {}
    client = chromadb.PersistentClient(path=str(tmp_path / "store"))
    for k in KS:
        copies[k] = ingest_copies(client, pe, victims, k)
        averaged = copies[k].mean(axis=1)
        leak[k] = attacker.evaluate(averaged, victim_tokens)["leakage"]
        record("averaging attacks run")
    client.clear_system_cache()
    return leak, copies


def test_keyed_copies_are_identical_and_leakage_does_not_grow(tmp_path, corpora):
    pe = PrivateEmbedding(model="fake", eps=EPS, key="averaging-test-key", store_geometry="none")
    leak, copies = leakage_by_k(tmp_path, pe, corpora, n_aux=300, n_victims=40)  # keyed streams: slower
    for k in KS:
        # every copy of a text is bit-identical to its first copy ...
        assert np.array_equal(copies[k], np.repeat(copies[k][:, :1], k, axis=1)), f"k={k}: copies differ"
        # ... and to the k = 1 vector: the average is the single vector
        np.testing.assert_array_equal(copies[k].mean(axis=1).astype(np.float32), copies[1][:, 0].astype(np.float32))
    assert leak[4] == leak[1] and leak[16] == leak[1], leak


def test_without_a_key_averaging_shrinks_noise_and_leakage_grows(tmp_path, corpora):
    """The documented weakness of fresh noise: the control for the keyed test above.

    Fresh noise per call, from a seeded generator so the figures are reproducible.
    """
    pe = PrivateEmbedding(model="fake", eps=EPS, random_state=0, store_geometry="none")
    leak, copies = leakage_by_k(tmp_path, pe, corpora)
    _, (victims, _) = corpora
    clean = np.asarray(pe.encoder.encode(victims), dtype=np.float64)
    noise = {k: float(np.linalg.norm(copies[k].mean(axis=1) - clean, axis=1).mean()) for k in KS}
    for k in KS[1:]:
        assert len({row.tobytes() for row in copies[k].reshape(-1, copies[k].shape[-1])}) == len(victims) * k
        # the noise of the average shrinks like 1/sqrt(k) (isotropic noise: E‖mean‖ ≈ E‖z‖/√k)
        assert noise[k] == pytest.approx(noise[1] / math.sqrt(k), rel=0.15), noise
    assert leak[4] > leak[1] + 0.05 and leak[16] > leak[1] + 0.1, leak
