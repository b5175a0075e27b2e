"""Subprocess of tests/test_reliability_crash.py: a long ingest in acknowledged batches.

Usage::

    python ingest_worker.py chroma|faiss PATH N_DOCS BATCH

Documents go through ``PrivateEmbedding(model="fake", eps=10)`` with the key from
``PRIVATE_VECTORS_KEY`` (keyed noise, so a re-run is idempotent). After each batch is durably
committed — Chroma ``upsert`` returned; FAISS ``save`` returned — the worker prints
``ACK <batch>`` and flushes: a line on stdout is a promise that the batch survives a crash.

FAISS: the index is reopened from PATH when it exists, and batches whose ids are all present are
skipped (``HAVE <batch>``, resume); every new batch is followed by a save.
"""

from __future__ import annotations

import sys
from pathlib import Path

NAMES = ["Maria Lopez", "John Smith", "Aiko Tanaka", "Omar Haddad", "Lena Fischer", "Ravi Patel"]
CITIES = ["Madrid", "Springfield", "Osaka", "Cairo", "Berlin", "Pune"]


def corpus(n: int) -> list[str]:
    """``n`` deterministic PII-like documents (distinct texts)."""
    return [f"record {i}: {NAMES[i % 6]} from {CITIES[(i // 6) % 6]} paid invoice {i * 7919 % 100003} "
            f"on day {i % 28 + 1}" for i in range(n)]


def batches(n: int, size: int) -> list[tuple[int, list[int]]]:
    return [(b, list(range(s, min(n, s + size)))) for b, s in enumerate(range(0, n, size))]


def embedding():
    from private_vectors import PrivateEmbedding

    return PrivateEmbedding(model="fake", eps=10)  # key from PRIVATE_VECTORS_KEY


def run_chroma(path: str, n: int, size: int) -> None:
    import chromadb

    from private_vectors.chroma import create_collection

    texts = corpus(n)
    # the library's path: a resumed run's new function is checked against, and bound to, the stored
    # record (its key salt), so the re-run writes the same keyed vectors (Chroma's own
    # get_or_create_collection compares names only)
    col = create_collection(chromadb.PersistentClient(path=path), "crash", embedding(), get_or_create=True)
    for b, ids in batches(n, size):
        col.upsert(ids=[f"doc-{i}" for i in ids], documents=[texts[i] for i in ids])
        print(f"ACK {b}", flush=True)


def run_faiss(path: str, n: int, size: int) -> None:
    from private_vectors.integrations.faiss import SIDECAR, PrivateFaissIndex

    texts = corpus(n)
    pe = embedding()
    folder = Path(path)
    idx = PrivateFaissIndex.load(folder, pe) if (folder / SIDECAR).exists() else PrivateFaissIndex(pe, kind="flat")
    for b, ids in batches(n, size):
        if all(i in idx.texts for i in ids):
            print(f"HAVE {b}", flush=True)  # already durable from an earlier run
            continue
        idx.add_texts([texts[i] for i in ids], ids=ids)
        idx.save(folder)
        print(f"ACK {b}", flush=True)


if __name__ == "__main__":
    store, path, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    print("READY", flush=True)
    {"chroma": run_chroma, "faiss": run_faiss}[store](path, n, size)
    print("DONE", flush=True)
