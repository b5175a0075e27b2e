"""Subprocess of tests/test_chroma_index_files.py: write Chroma collections, then exit.

Usage::

    python chroma_files_worker.py write FOLDER N_DOCS     # every protected path + one plain add
    python chroma_files_worker.py markers FOLDER RUNS     # raw markers handled, then a protected write

``write`` puts ``N_DOCS`` documents into one collection per protected path (native
``add_documents``, ``private_vectors.langchain.Chroma``, LlamaIndex through
``chroma_vector_store``), each with a keyed text stage (so the keyed query index collection is
written too), plus a plain ``collection.add`` of vectors (the unprotected control). Started
with ``GLIBC_TUNABLES=glibc.malloc.perturb=165:glibc.malloc.tcache_count=0`` every byte glibc
hands out is ``0x5A`` until written, so bytes the index never wrote are recognisable.

``markers`` repeats RUNS times, each in a forked child of one process that loaded the text
stage: raw documents with unique e-mail addresses are built on a thread that then exits (as an
application's loader would) and go through the text stage (which replaces them), then a new
folder is written through ``add_documents``; it prints one JSON line per run with the files
holding a marker.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import traceback
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
KEY = "worker-key-5b0c7e2a9d4f1e8c3a6b"
MARK = "zqxmarker"


def _embedding():
    from private_vectors import PrivateEmbedding

    return PrivateEmbedding(model="fake", concept="PII", eps=10, key=KEY)


def _texts(n: int) -> list[str]:
    names = ["Maria Lopez", "Tomas Berger", "Aiko Tanaka", "Omar Haddad"]
    return [f"note {i}: {names[i % 4]} paid invoice {i * 7919 % 100003}." for i in range(n)]


def write(folder: Path, n: int) -> None:
    import chromadb

    from private_vectors.chroma import add_documents, create_collection
    from private_vectors.langchain import Chroma
    from private_vectors.llamaindex import PrivateLlamaEmbedding, SanitizeNodes, chroma_vector_store

    texts, ids = _texts(n), [f"d{i}" for i in range(n)]
    client = chromadb.PersistentClient(path=str(folder))
    col = create_collection(client, "native", _embedding())
    for start in range(0, n, 500):
        add_documents(col, ids=ids[start:start + 500], documents=texts[start:start + 500])

    store = Chroma(collection_name="dropin", client=client, embedding_function=_embedding())
    store.add_texts(texts, ids=ids)

    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.schema import TextNode

    ef = _embedding()
    llama = create_collection(client, "llama", ef)
    nodes = SanitizeNodes(embedding=ef)([TextNode(text=t, id_=i) for t, i in zip(texts, ids, strict=True)])
    VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=chroma_vector_store(llama)),
                     embed_model=PrivateLlamaEmbedding(embedding=ef))

    plain = client.create_collection("plain")  # the unprotected control: nothing scrubs it
    plain.add(ids=ids[:3], embeddings=[[float(i), 1.0, 2.0] for i in range(3)])


def _load_in_a_thread(run: int) -> list[str]:
    """Raw documents as an application thread that then exits would hand them over (a loader,
    a request handler): their freed copies stay in that thread's malloc arena."""
    out: list[str] = []

    def load() -> None:
        lines = [f"Please write to {MARK}{run:03d}x{i:03d}@example.org about the invoice of Tomas Berger. "
                 for i in range(40)]
        "".join(line * 40 for line in lines).upper().lower()
        out.extend(line * 8 for line in lines[:12])

    t = threading.Thread(target=load)
    t.start()
    t.join()
    return out


def _one_marker_run(ef, where: Path, run: int) -> dict:
    import chromadb

    from private_vectors.chroma import add_documents, create_collection

    raw = _load_in_a_thread(run)
    out = ef.sanitize_documents(raw)
    assert not any(MARK in o for o in out), "the text stage kept a marker"
    del raw, out
    col = create_collection(chromadb.PersistentClient(path=str(where)), "notes", ef)
    add_documents(col, ids=["a", "b"], documents=["Anna Novak paid.", "The parcel was sent."])
    needles = (MARK.encode(), MARK.encode("utf-16-le"))
    hits = sorted(str(p.relative_to(where)) for p in where.rglob("*")
                  if p.is_file() and any(x in p.read_bytes() for x in needles))
    return {"run": run, "hits": hits}


def markers(folder: Path, runs: int) -> None:
    """Each run in a forked child (a fresh Chroma runtime, the parent's loaded text stage)."""
    ef = _embedding()
    ef.sanitize_documents(["Maria Lopez wrote to maria@example.org."])  # detectors loaded before the forks
    for run in range(runs):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                print(json.dumps(_one_marker_run(ef, folder / f"run{run}", run)), flush=True)
                code = 0
            except BaseException:
                traceback.print_exc()
                sys.stderr.flush()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise SystemExit(f"run {run} failed ({status})")


if __name__ == "__main__":
    mode, target, count = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    (write if mode == "write" else markers)(target, count)
