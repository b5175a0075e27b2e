"""Raw text in Chroma's HNSW files: how often it lands there, and what zeroing costs.

chromadb (1.5.9, hnswlib fork at 6868102) allocates an HNSW segment's level-0 and length
arrays with ``malloc`` and writes all ``max_elements`` of them when a collection receives its
first vector, so the files hold heap bytes the index never wrote (the upstream reproduction,
without this library: ``benchmarks/chroma_uninitialised_repro.py``).

Markers: each run is a forked child of one process that loaded the text stage. Raw documents
with unique e-mail addresses are built on a thread that then exits (an application's loader or
request thread), go through the text stage (which replaces the addresses), and a new local
folder is written through ``private_vectors.chroma.add_documents``; every persisted byte is
scanned (UTF-8 and UTF-16). Run it on a commit before and after the change to compare.

Cost: ``--cost`` times ingest of ``--cost-docs`` documents through ``add_documents`` (batches of
100) and, on the same store, as many calls of ``scrub_index_files`` on their own, side by side
in one process (medians of ``--cost-repeats``).

    .venv/bin/python benchmarks/chroma_heap.py --runs 50 --cost --out benchmarks/results/chroma_heap.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path

MARK = "zqxmarker"
_KEY = "bench-only-key-0f3a9c2e7d1b4a6f8e5c"  # a fixed benchmark key (never a real one)


def _embedding(model: str):
    from private_vectors import PrivateEmbedding

    return PrivateEmbedding(model=model, concept="PII", eps=10, key=_KEY)


def _loaded_in_a_thread(run: int) -> list[str]:
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


def _one_run(ef, where: Path, run: int) -> list[str]:
    import chromadb

    from private_vectors.chroma import add_documents, create_collection

    raw = _loaded_in_a_thread(run)
    out = ef.sanitize_documents(raw)
    if any(MARK in o for o in out):
        raise RuntimeError("the text stage kept a marker: the scan would be meaningless")
    del raw, out
    col = create_collection(chromadb.PersistentClient(path=str(where)), "notes", ef)
    add_documents(col, ids=["a", "b"], documents=["Anna Novak paid.", "The parcel was sent."])
    needles = (MARK.encode(), MARK.encode("utf-16-le"))
    return sorted(str(p.relative_to(where)) for p in where.rglob("*")
                  if p.is_file() and any(x in p.read_bytes() for x in needles))


def markers(runs: int, model: str) -> list[list[str]]:
    ef = _embedding(model)
    ef.sanitize_documents(["Maria Lopez wrote to maria@example.org."])
    results: list[list[str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(runs):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                code = 1
                try:
                    os.write(write, json.dumps(_one_run(ef, Path(tmp) / f"run{run}", run)).encode())
                    code = 0
                except BaseException:
                    traceback.print_exc()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
            os.close(write)
            with os.fdopen(read) as fh:
                payload = fh.read()
            _, status = os.waitpid(pid, 0)
            if status != 0:
                raise RuntimeError(f"run {run} failed")
            results.append(json.loads(payload))
            print(f"run {run + 1}/{runs}: {results[-1] or 'clean'}", file=sys.stderr)
    return results


def cost(n_docs: int, model: str, repeats: int) -> dict[str, float]:
    import chromadb

    from private_vectors.chroma import add_documents, create_collection, scrub_index_files

    docs = [f"Maria Lopez {i} wrote about the trial results in study {i}." for i in range(n_docs)]
    ef = _embedding(model)
    ef.sanitize_documents(docs[:4])
    adds, scrubs = [], []
    for rep in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            col = create_collection(chromadb.PersistentClient(path=tmp), f"cost{rep}", ef)
            t0 = time.perf_counter()
            for start in range(0, n_docs, 100):
                add_documents(col, ids=[f"r{rep}d{i}" for i in range(start, min(n_docs, start + 100))],
                              documents=docs[start:start + 100])
            adds.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            for _ in range(0, n_docs, 100):  # as many scrubs as add_documents made
                scrub_index_files(col)
            scrubs.append(time.perf_counter() - t0)
    adds.sort()
    scrubs.sort()
    add, scrub = adds[len(adds) // 2], scrubs[len(scrubs) // 2]
    return {"docs": n_docs, "calls": -(-n_docs // 100), "add_s": add, "scrub_s": scrub, "share": scrub / add}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--model", default="fake", help="the encoder (the text stage is the same for every model)")
    p.add_argument("--cost", action="store_true")
    p.add_argument("--cost-docs", type=int, default=2000)
    p.add_argument("--cost-repeats", type=int, default=3)
    p.add_argument("--cost-model", default="all-MiniLM-L6-v2")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    runs = markers(args.runs, args.model) if args.runs else []
    leaked = [r for r in runs if r]
    lines = ["# Raw text in persisted Chroma files, and the cost of zeroing what the index never wrote", "",
             f"Command: `.venv/bin/python benchmarks/chroma_heap.py {' '.join(sys.argv[1:] if argv is None else argv)}`",
             ""]
    if runs:
        files = sorted({f.split("/")[-1] for r in leaked for f in r})
        lines += [f"- runs with a raw marker in a persisted byte: **{len(leaked)} of {len(runs)}**",
                  f"- files holding markers: {', '.join(files) if files else 'none'}"]
    if args.cost:
        c = cost(args.cost_docs, args.cost_model, args.cost_repeats)
        lines += ["", f"Cost with `{args.cost_model}` (medians of {args.cost_repeats} repeats, one process):", "",
                  "| documents | add_documents calls | add_documents total (s) | the same number of scrubs alone (s) "
                  "| share |", "|---|---|---|---|---|",
                  f"| {c['docs']} | {c['calls']} | {c['add_s']:.2f} | {c['scrub_s']:.3f} | {100 * c['share']:.2f} % |"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
