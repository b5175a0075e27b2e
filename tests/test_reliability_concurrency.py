"""Concurrency: 4 threads and an asyncio gather ingesting into one persistent collection.

Guarantees (issue 6): every id present exactly once; every stored vector finite with a noise
norm in the range the mechanism's calibration predicts; RNG streams independent (without a key no
two documents — not even copies of the same text ingested by different threads — receive
identical noise) and thread-safe (a shared seeded generator stays correct under contention);
with a key, concurrent ingestion gives exactly the single-threaded vectors.

Laplace on FakeEncoder(64), ε = 10, unit = 1/√64: the noise norm R ~ Gamma(64, 1/80), mean 0.8,
standard deviation 0.1 (SPARSE paper Def. 3; README "Mechanisms").
"""

from __future__ import annotations

import asyncio
import math
import threading

import numpy as np
import pytest

from _workers.counts import flush, record
from private_vectors import PrivateEmbedding

chromadb = pytest.importorskip("chromadb")

N_THREADS = 4
BATCHES = 8
BATCH = 25
DIM = 64
EPS = 10.0
TEXTS = [f"patient {i} named Maria Lopez {i % 7} visited clinic {i % 11} on Monday" for i in range(BATCHES * BATCH)]
MEAN_R = DIM * (1 / math.sqrt(DIM)) / EPS  # Gamma(n, unit/ε) mean = 0.8
SD_R = math.sqrt(DIM) * (1 / math.sqrt(DIM)) / EPS  # 0.1


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    flush(__name__)


def _ingest_threads(col, ids_of) -> list[BaseException]:
    """Each thread adds every text of TEXTS (own ids) in BATCHES batches; all start together."""
    barrier = threading.Barrier(N_THREADS)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            barrier.wait()
            for b in range(BATCHES):
                sl = slice(b * BATCH, (b + 1) * BATCH)
                col.add(ids=[ids_of(t, i) for i in range(sl.start, sl.stop)], documents=TEXTS[sl])
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(N_THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    return errors


def _check_stored(pe: PrivateEmbedding, got: dict, expected_ids: list[str], texts_by_id: dict[str, str]) -> np.ndarray:
    ids = got["ids"]
    assert len(ids) == len(set(ids)) == len(expected_ids), "an id is missing or duplicated"
    assert sorted(ids) == sorted(expected_ids)
    for i, doc in zip(ids, got["documents"], strict=True):
        assert doc == texts_by_id[i]
    Z = np.asarray(got["embeddings"], dtype=np.float64)
    assert Z.shape == (len(ids), pe.out_dim) and np.all(np.isfinite(Z))
    clean = np.asarray(pe.encoder.encode([texts_by_id[i] for i in ids]), dtype=np.float64)
    R = np.linalg.norm(Z - clean, axis=1)
    assert R.min() > MEAN_R - 7 * SD_R and R.max() < MEAN_R + 7 * SD_R, (R.min(), R.max())
    assert abs(R.mean() - MEAN_R) < 4 * SD_R / math.sqrt(len(R)), R.mean()
    norms = np.linalg.norm(Z, axis=1)
    assert np.all(norms >= R - 1 - 1e-5) and np.all(norms <= R + 1 + 1e-5)
    return Z


def test_four_threads_one_persistent_collection_fresh_noise(tmp_path):
    pe = PrivateEmbedding(model=f"fake:{DIM}", eps=EPS, store_geometry="none")  # secure randomness: no seed, no key
    client = chromadb.PersistentClient(path=str(tmp_path))
    col = client.create_collection("threads", embedding_function=pe)
    errors = _ingest_threads(col, lambda t, i: f"t{t}-{i}")
    assert not errors, errors
    expected = [f"t{t}-{i}" for t in range(N_THREADS) for i in range(len(TEXTS))]
    record("concurrent documents", len(expected))
    # reopen from disk in a fresh client object: what is persisted, not an in-memory view
    del col, client
    col = chromadb.PersistentClient(path=str(tmp_path)).get_collection("threads", embedding_function=pe)
    assert col.count() == len(expected)
    got = col.get(include=["embeddings", "documents"])
    Z = _check_stored(pe, got, expected, {f"t{t}-{i}": TEXTS[i] for t in range(N_THREADS) for i in range(len(TEXTS))})
    # independence: no two rows identical, in particular the 4 copies of each text all differ
    assert len({row.tobytes() for row in Z.astype(np.float32)}) == len(Z)
    record("documents lost", len(expected) - len(got["ids"]))


def test_threads_with_a_key_give_the_single_threaded_vectors(tmp_path):
    pe = PrivateEmbedding(model=f"fake:{DIM}", eps=EPS, key="concurrency-test-key", store_geometry="none")
    reference = pe.embed_array(TEXTS)  # single-threaded
    col = chromadb.PersistentClient(path=str(tmp_path)).create_collection("keyed", embedding_function=pe)
    assert not _ingest_threads(col, lambda t, i: f"t{t}-{i}")
    got = col.get(include=["embeddings", "documents"])
    expected = [f"t{t}-{i}" for t in range(N_THREADS) for i in range(len(TEXTS))]
    record("concurrent documents", len(expected))
    Z = _check_stored(pe, got, expected, {f"t{t}-{i}": TEXTS[i] for t in range(N_THREADS) for i in range(len(TEXTS))})
    by_id = dict(zip(got["ids"], Z, strict=True))
    for i in range(len(TEXTS)):
        copies = [by_id[f"t{t}-{i}"] for t in range(N_THREADS)]
        for c in copies[1:]:  # the 4 threads' copies of a text: bit-identical
            np.testing.assert_array_equal(c, copies[0])
        # and the single-threaded vector (Chroma's cosine space may round the last float32 bit)
        np.testing.assert_allclose(copies[0], reference[i], rtol=0, atol=1e-6)


def test_shared_seeded_generator_is_thread_safe():
    """One int-seeded PrivateEmbedding hammered by 4 threads: correct calibration, no repeats."""
    pe = PrivateEmbedding(model=f"fake:{DIM}", eps=EPS, random_state=1234, store_geometry="none")
    out: dict[int, list[np.ndarray]] = {t: [] for t in range(N_THREADS)}
    barrier = threading.Barrier(N_THREADS)

    def work(t: int) -> None:
        barrier.wait()
        for b in range(BATCHES):
            out[t].append(pe.embed_array(TEXTS[b * BATCH:(b + 1) * BATCH]))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(N_THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    Z = np.vstack([np.vstack(out[t]) for t in range(N_THREADS)]).astype(np.float64)
    assert Z.shape == (N_THREADS * len(TEXTS), DIM) and np.all(np.isfinite(Z))
    clean = np.tile(pe.encoder.encode(TEXTS), (N_THREADS, 1))
    R = np.linalg.norm(Z - clean, axis=1)
    assert abs(R.mean() - MEAN_R) < 4 * SD_R / math.sqrt(len(R)) and abs(R.std() - SD_R) < 0.15 * SD_R
    assert len({row.tobytes() for row in Z}) == len(Z)
    # directions are still uniform: the mean noise direction is ~0 (|mean| ~ 1/sqrt(m))
    U = (Z - clean) / R[:, None]
    assert np.linalg.norm(U.mean(axis=0)) < 5 / math.sqrt(len(U))
    record("concurrent documents", len(Z))


def test_asyncio_gather_aembed_documents_into_one_collection(tmp_path):
    pe = PrivateEmbedding(model=f"fake:{DIM}", eps=EPS, store_geometry="none")
    col = chromadb.PersistentClient(path=str(tmp_path)).create_collection("async", embedding_function=pe)

    async def one(batch_no: int) -> None:
        sl = slice((batch_no % BATCHES) * BATCH, (batch_no % BATCHES + 1) * BATCH)
        vectors = await pe.aembed_documents(TEXTS[sl])
        ids = [f"a{batch_no}-{i}" for i in range(sl.start, sl.stop)]
        await asyncio.to_thread(col.add, ids=ids, documents=TEXTS[sl], embeddings=vectors)

    async def main() -> None:
        await asyncio.gather(*(one(b) for b in range(2 * BATCHES)))

    asyncio.run(main())
    expected, texts_by_id = [], {}
    for b in range(2 * BATCHES):
        for i in range((b % BATCHES) * BATCH, (b % BATCHES + 1) * BATCH):
            expected.append(f"a{b}-{i}")
            texts_by_id[f"a{b}-{i}"] = TEXTS[i]
    got = col.get(include=["embeddings", "documents"])
    Z = _check_stored(pe, got, expected, texts_by_id)
    assert len({row.tobytes() for row in Z.astype(np.float32)}) == len(Z)  # each call its own stream
    record("concurrent documents", len(expected))


def test_asyncio_gather_langchain_aadd_texts(tmp_path):
    lc = pytest.importorskip("langchain_chroma")
    pe = PrivateEmbedding(model=f"fake:{DIM}", eps=EPS, store_geometry="none")
    store = lc.Chroma(collection_name="lc_async", embedding_function=pe, persist_directory=str(tmp_path))

    async def main() -> list[list[str]]:
        return await asyncio.gather(*(
            store.aadd_texts(TEXTS[(b % BATCHES) * BATCH:(b % BATCHES + 1) * BATCH],
                             ids=[f"l{b}-{i}" for i in range((b % BATCHES) * BATCH, (b % BATCHES + 1) * BATCH)])
            for b in range(2 * BATCHES)))

    returned = asyncio.run(main())
    expected = [i for ids in returned for i in ids]
    texts_by_id = {f"l{b}-{i}": TEXTS[i] for b in range(2 * BATCHES)
                   for i in range((b % BATCHES) * BATCH, (b % BATCHES + 1) * BATCH)}
    assert sorted(expected) == sorted(texts_by_id)
    reopened = chromadb.PersistentClient(path=str(tmp_path)).get_collection("lc_async")
    got = reopened.get(include=["embeddings", "documents"])
    Z = _check_stored(pe, got, expected, texts_by_id)
    assert len({row.tobytes() for row in Z.astype(np.float32)}) == len(Z)
    record("concurrent documents", len(expected))
