"""Ingest throughput: SciFact abstracts into persistent Chroma through PrivateEmbedding vs a plain
sentence-transformers embedding function of the same model, in the same run.

Both collections get the same documents in the same chunks; the chunk order alternates
(PrivateEmbedding first on even chunks, plain first on odd ones) so that load from other
processes on a shared machine falls on both sides alike. Both encoders use the same model
files, device and batch size. Throughput = documents / summed `collection.add` time, which
includes embedding, noise, Chroma's HNSW insert and its SQLite write.

    .venv/bin/python benchmarks/ingest.py --data ../shared/data --n 2000 --out benchmarks/results/ingest.md
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--n", type=int, default=2000, help="number of abstracts")
    p.add_argument("--chunk", type=int, default=100, help="documents per collection.add call")
    p.add_argument("--batch-size", type=int, default=32, help="encoder batch size (both sides)")
    p.add_argument("--concept", default="PII", help="concept for PrivateEmbedding, or 'none'")
    p.add_argument("--eps", type=float, default=10.0)
    p.add_argument("--out", default=None)
    args = p.parse_args()

    import chromadb
    import torch
    from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

    from private_vectors import PrivateEmbedding
    from private_vectors.encoders import SentenceTransformerEncoder, default_model_path
    from private_vectors.eval.datasets import load_beir

    ds = load_beir(Path(args.data) / "retrieval" / "scifact")
    ids = list(ds.corpus)[: args.n]
    docs = [ds.corpus[i] for i in ids]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model_path = str(default_model_path())

    t0 = time.perf_counter()
    encoder = SentenceTransformerEncoder("all-MiniLM-L6-v2", batch_size=args.batch_size, device=device,
                                         show_progress=False)
    concept = None if args.concept.lower() == "none" else args.concept
    private = PrivateEmbedding(concept=concept, eps=args.eps, model=encoder)
    plain = SentenceTransformerEmbeddingFunction(model_name=model_path, device=device, normalize_embeddings=True)
    setup = time.perf_counter() - t0
    # warm both models up (first forward passes allocate), outside the timing
    private(docs[:8])
    plain(docs[:8])

    tmp = tempfile.TemporaryDirectory(prefix="pv-ingest-")  # removed at exit
    root = Path(tmp.name)
    col_private = chromadb.PersistentClient(path=str(root / "private")).create_collection(
        "scifact", embedding_function=private)
    col_plain = chromadb.PersistentClient(path=str(root / "plain")).create_collection(
        "scifact", embedding_function=plain)

    times = {"private": 0.0, "plain": 0.0}
    ratios = []
    n_chunks = (len(docs) + args.chunk - 1) // args.chunk
    for c in range(n_chunks):
        sl = slice(c * args.chunk, (c + 1) * args.chunk)
        order = [("private", col_private), ("plain", col_plain)]
        if c % 2:
            order.reverse()
        chunk_t = {}
        for name, col in order:
            t = time.perf_counter()
            col.add(ids=ids[sl], documents=docs[sl])
            chunk_t[name] = time.perf_counter() - t
            times[name] += chunk_t[name]
        ratios.append(chunk_t["plain"] / chunk_t["private"])
        print(f"chunk {c + 1}/{n_chunks}: private {chunk_t['private']:.2f}s plain {chunk_t['plain']:.2f}s",
              flush=True)
    assert col_private.count() == col_plain.count() == len(docs)

    thr = {k: len(docs) / v for k, v in times.items()}
    ratio = thr["private"] / thr["plain"]
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    cmd = " ".join([".venv/bin/python", "benchmarks/ingest.py", *sys.argv[1:]])
    lines = [
        "# Ingest throughput: PrivateEmbedding vs plain sentence-transformers (Chroma, persistent)",
        "",
        f"Command: `{cmd}`",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()} with {os.cpu_count()} CPU(s), "
        f"device {device}, torch {torch.__version__}, chromadb {chromadb.__version__}; "
        f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (machine shared with other jobs).",
        "",
        f"{len(docs)} SciFact abstracts (title + text), chunks of {args.chunk} per `collection.add`, encoder batch "
        f"size {args.batch_size}, same model files ({Path(model_path).name}). PrivateEmbedding: "
        f"`{private!r}`. Plain: chromadb `SentenceTransformerEmbeddingFunction` (normalize_embeddings=True). "
        f"Set-up (model loads{', concept' if concept else ''}) {setup:.1f} s, not timed.",
        "",
        "| embedding function | total add time (s) | docs/s |",
        "|---|---|---|",
        f"| plain sentence-transformers | {times['plain']:.1f} | {thr['plain']:.2f} |",
        f"| PrivateEmbedding | {times['private']:.1f} | {thr['private']:.2f} |",
        "",
        f"**Throughput ratio (PrivateEmbedding / plain): {ratio:.3f}** (target >= 0.95). "
        f"Per-chunk ratios: median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
