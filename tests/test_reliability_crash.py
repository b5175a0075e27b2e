"""Crash recovery: SIGKILL in the middle of a long ingest, for Chroma and for FAISS.

Guarantees (issue 6): a subprocess ingesting a long corpus in acknowledged batches
(tests/_workers/ingest_worker.py prints ``ACK <batch>`` after each durable commit) is killed with
SIGKILL at a random moment; reopening the store in another process shows every acknowledged
batch, each batch is present completely or not at all, and every stored vector is exactly the
keyed vector of its text. Re-running the ingest with the same key is idempotent: same ids,
identical vectors (no duplicates, nothing lost). Uses FakeEncoder (``model="fake"``): fast.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from _workers.counts import flush, record
from _workers.ingest_worker import batches, corpus
from private_vectors import PrivateEmbedding
from private_vectors.embedding import KEY_ENV

WORKER = Path(__file__).resolve().parent / "_workers" / "ingest_worker.py"
KEY = "crash-recovery-key-7c1f"
N_DOCS, BATCH = 1200, 40  # 30 batches


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    flush(__name__)


_EXPECTED: dict[str, dict[str, np.ndarray]] = {}


def expected_for(config: dict) -> dict[str, np.ndarray]:
    """The keyed vectors every stored document must have (computed here, in another process),
    under the key derivation the store recorded (each new collection has its own scrypt salt).

    As the store holds them: a cosine-space FAISS index stores L2-normalised vectors.
    """
    salt = str(config.get("key_salt"))
    if salt in _EXPECTED:
        return _EXPECTED[salt]
    pe = PrivateEmbedding(model="fake", eps=10, key=KEY)
    pe.pipeline.keying.bind(config, "the crash-test store")
    Z = pe.embed_array(corpus(N_DOCS)).astype(np.float64)
    normalised = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    _EXPECTED[salt] = {"space": pe.space,  # type: ignore[dict-item]
                       **{f"doc-{i}": Z[i] for i in range(N_DOCS)},
                       **{f"unit:doc-{i}": normalised[i] for i in range(N_DOCS)}}
    return _EXPECTED[salt]


@pytest.fixture(scope="module")
def expected():
    return expected_for


def run_worker(store: str, path: Path, *, kill_after: int | None, rng: random.Random) -> tuple[set[int], bool]:
    """Run the worker; SIGKILL it ``kill_after`` new ACKs in (after a random 0–60 ms delay).

    Returns the acknowledged batch numbers (including lines still buffered when it died) and
    whether it was killed.
    """
    env = {**os.environ, KEY_ENV: KEY}
    err = open(path.parent / f"{path.name}-worker.stderr", "ab")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-u", str(WORKER), store, str(path), str(N_DOCS), str(BATCH)],
                            stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    acked: set[int] = set()
    killed = False
    try:
        assert proc.stdout is not None
        new = 0
        for line in proc.stdout:
            if line.startswith("HAVE"):  # FAISS resume: a batch an earlier run made durable
                acked.add(int(line.split()[1]))
            elif line.startswith("ACK"):
                acked.add(int(line.split()[1]))
                new += 1
                if kill_after is not None and new >= kill_after:
                    time.sleep(rng.uniform(0, 0.06))  # land somewhere inside the next batch's write
                    os.kill(proc.pid, signal.SIGKILL)
                    killed = True
                    break
        rest = proc.stdout.read()  # lines written before the kill are promises too
        acked |= {int(ln.split()[1]) for ln in rest.splitlines() if ln.startswith(("ACK", "HAVE"))}
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        err.close()
    if killed:
        assert code == -signal.SIGKILL
    else:
        assert code == 0, (path.parent / f"{path.name}-worker.stderr").read_text()[-3000:]
    return acked, killed


def read_chroma(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    import chromadb

    client = chromadb.PersistentClient(path=str(path))
    try:
        col = client.get_collection("crash")  # rebuilt from the stored config
        got = col.get(include=["embeddings"])
        config = col.configuration_json["embedding_function"]["config"]
        return {i: np.asarray(e, dtype=np.float32) for i, e in zip(got["ids"], got["embeddings"], strict=True)}, config
    finally:
        client.clear_system_cache()


def read_faiss(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    from private_vectors.integrations.faiss import SIDECAR, PrivateFaissIndex

    idx = PrivateFaissIndex.load(path, PrivateEmbedding(model="fake", eps=10, key=KEY))
    assert len(idx) == len(idx.texts), "index and sidecar disagree"
    vectors = idx.stored_vectors()
    config = json.loads((Path(path) / SIDECAR).read_text())["embedding"]
    return {f"doc-{i}": vectors[k] for k, i in enumerate(sorted(idx.texts))}, config


def check_state(read: tuple[dict[str, np.ndarray], dict], acked: set[int], expected_for,
                store: str = "chroma") -> int:
    """Every acknowledged batch present, batches all-or-nothing, vectors right; returns docs lost.

    The keyed vector of each text is recomputed in this process; the store may round it in the
    last float32 bit (Chroma's cosine space) or normalise it (FAISS cosine index).
    """
    stored, config = read
    expected = expected_for(config)
    lost = 0
    for b, ids in batches(N_DOCS, BATCH):
        present = [f"doc-{i}" in stored for i in ids]
        if b in acked:
            lost += present.count(False)
        assert all(present) or not any(present), f"batch {b} is partially stored"
    assert lost == 0, f"{lost} acknowledged documents lost"
    unit = store == "faiss" and expected["space"] == "cosine"
    for doc_id, vec in stored.items():
        np.testing.assert_allclose(vec, expected[f"unit:{doc_id}" if unit else doc_id], rtol=0, atol=1e-6)
    return lost


@pytest.mark.parametrize("store, kills", [
    ("chroma", 1), ("faiss", 1),
    pytest.param("chroma", 5, marks=pytest.mark.slow), pytest.param("faiss", 5, marks=pytest.mark.slow),
])
def test_sigkill_mid_ingest_then_resume(tmp_path, expected, store, kills):
    if store == "faiss":
        pytest.importorskip("faiss")
        pytest.importorskip("private_vectors.integrations.faiss")
    else:
        pytest.importorskip("chromadb")
    read = read_chroma if store == "chroma" else read_faiss
    path = tmp_path / "store"
    rng = random.Random(f"{store}-{kills}")
    acked: set[int] = set()
    n_batches = len(batches(N_DOCS, BATCH))
    for _ in range(kills):
        got, killed = run_worker(store, path, kill_after=rng.randint(2, n_batches // (kills + 1) + 2), rng=rng)
        assert killed, "the worker finished before it could be killed; make the corpus longer"
        acked |= got
        record("documents lost", check_state(read(path), acked, expected, store))
        record(f"crashes survived ({store})")
        record("acknowledged documents checked", sum(len(ids) for b, ids in batches(N_DOCS, BATCH) if b in acked))
    before = read(path)[0]
    # resume to the end (Chroma re-upserts every batch, acknowledged ones included) — and in the
    # slow variant once more: idempotent (same ids, identical vectors)
    for _ in range(2 if kills > 1 else 1):
        got, killed = run_worker(store, path, kill_after=None, rng=rng)
        assert not killed and got == set(range(n_batches))
        stored, config = read(path)
        assert sorted(stored) == [f"doc-{i}" for i in sorted(range(N_DOCS), key=lambda i: f"doc-{i}")], \
            "ids missing or duplicated after the re-run"
        check_state((stored, config), set(range(n_batches)), expected, store)
        for doc_id, vec in before.items():  # what survived the crash is what the re-run stores
            np.testing.assert_array_equal(stored[doc_id], vec)


# -- a save that fails half-way (disk full, a kill inside the write) keeps the last good state ----------
def _faiss_with(n_batches: int):
    pytest.importorskip("faiss")
    faiss_mod = pytest.importorskip("private_vectors.integrations.faiss")
    pe = PrivateEmbedding(model="fake", eps=10, key=KEY)
    idx = faiss_mod.PrivateFaissIndex(pe, kind="flat")
    texts = corpus(N_DOCS)
    for _, ids in batches(N_DOCS, BATCH)[:n_batches]:
        idx.add_texts([texts[i] for i in ids], ids=ids)
    return faiss_mod, idx, pe


def _half_then_fail(write):
    """Wrap a file writer: write half of what it would, then fail like a full disk."""
    def broken(target, *args, **kwargs):
        tmp = Path(str(target) + ".full")
        write(tmp, *args, **kwargs)
        data = tmp.read_bytes()
        tmp.unlink()
        Path(target).write_bytes(data[: len(data) // 2])
        raise OSError(28, "No space left on device")
    return broken


@pytest.mark.parametrize("failing", ["index", "sidecar", "between-files"])
def test_faiss_save_failing_half_way_keeps_the_last_saved_state(tmp_path, monkeypatch, expected, failing):
    faiss_mod, idx, pe = _faiss_with(3)
    folder = idx.save(tmp_path / "idx")  # acknowledged state: 3 batches
    texts = corpus(N_DOCS)
    _, ids = batches(N_DOCS, BATCH)[3]
    idx.add_texts([texts[i] for i in ids], ids=ids)
    import faiss

    if failing == "index":
        real = faiss.write_index
        monkeypatch.setattr(faiss, "write_index", lambda index, target: _half_then_fail(
            lambda t: real(index, str(t)))(target))
    elif failing == "sidecar":
        real_write_text = Path.write_text
        real_write_bytes = Path.write_bytes

        def sidecar_fails(self, data, *args, **kwargs):
            if faiss_mod.SIDECAR in self.name:
                real_write_bytes(self, data.encode("utf-8")[: len(data) // 2])
                raise OSError(28, "No space left on device")
            return real_write_text(self, data, *args, **kwargs)

        monkeypatch.setattr(Path, "write_text", sidecar_fails)
    else:  # the process dies after the first of the two files is in place
        calls = {"n": 0}
        real_replace = os.replace

        def replace_once(src, dst):
            calls["n"] += 1
            if calls["n"] == 2:
                raise OSError(28, "No space left on device")
            return real_replace(src, dst)

        monkeypatch.setattr(os, "replace", replace_once)
    with pytest.raises(OSError):
        idx.save(folder)
    monkeypatch.undo()
    record("failed saves survived (faiss)")
    loaded = faiss_mod.PrivateFaissIndex.load(folder, pe)  # never an unreadable folder
    assert len(loaded) == len(loaded.texts) and len(loaded) in (3 * BATCH, 4 * BATCH)
    acked = {0, 1, 2} | ({3} if len(loaded) == 4 * BATCH else set())
    record("documents lost", check_state(read_faiss(folder), acked, expected, "faiss"))
    # and the next save after the failure leaves exactly the two files
    loaded.save(folder)
    assert {p.name for p in folder.iterdir()} == {faiss_mod.INDEX_FILE, faiss_mod.SIDECAR}
