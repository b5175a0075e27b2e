"""Ingest cost of the text stage: (detection + encoding + Laplace noise) vs encoding alone, same model.

Long documents: SciFact abstracts (title + text, ~1.5k characters). Short documents: the
synth_dataset_v2 sentences (presidio-research, one or two sentences each). For each chunk of
documents the two sides run back to back, alternating which goes first (so load from other
processes on a shared machine falls on both alike): private = ``Sanitizer("PII").apply`` then
``encoder.encode`` then ``LaplaceMechanism(epsilon=10).perturb``; plain = ``encoder.encode``.
Same encoder object (the packaged all-MiniLM-L6-v2), same batch size. Ratio = plain time /
private time = private throughput as a fraction of plain throughput.

    .venv/bin/python benchmarks/text_ingest.py --data ../shared/data --out benchmarks/results/text_ingest.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def run(name: str, docs: list[str], chunk: int, sanitizer, encoder, mech) -> dict:
    priv_t, plain_t, det_t = [], [], []
    for k, i in enumerate(range(0, len(docs), chunk)):
        part = docs[i:i + chunk]

        def private(part=part):
            t0 = time.perf_counter()
            clean = sanitizer.apply(part)
            t1 = time.perf_counter()
            mech.perturb(encoder.encode(clean))
            return time.perf_counter() - t0, t1 - t0

        def plain(part=part):
            t0 = time.perf_counter()
            encoder.encode(part)
            return time.perf_counter() - t0

        if k % 2 == 0:
            p, d = private()
            q = plain()
        else:
            q = plain()
            p, d = private()
        priv_t.append(p)
        plain_t.append(q)
        det_t.append(d)
    n = len(docs)
    return {"set": name, "docs": n, "mean_chars": statistics.mean(len(d) for d in docs),
            "private_docs_per_s": n / sum(priv_t), "plain_docs_per_s": n / sum(plain_t),
            "detect_ms_per_doc": 1000 * sum(det_t) / n, "encode_ms_per_doc": 1000 * sum(plain_t) / n,
            "ratio": sum(plain_t) / sum(priv_t),
            "ratio_median_chunk": statistics.median(q / p for p, q in zip(priv_t, plain_t, strict=True))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--long", type=int, default=400, help="SciFact abstracts")
    ap.add_argument("--short", type=int, default=1000, help="short sentences")
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import torch

    from private_vectors.encoders import SentenceTransformerEncoder
    from private_vectors.eval.datasets import load_beir
    from private_vectors.mechanisms import LaplaceMechanism
    from private_vectors.text import Sanitizer

    torch.set_num_threads(max(1, (os.cpu_count() or 1)))
    data = Path(args.data)
    ds = load_beir(data / "retrieval" / "scifact")
    long_docs = list(ds.corpus.values())[: args.long]
    short_docs = [r["full_text"] for r in json.loads((data / "pii" / "synth_dataset_v2.json").read_text())][: args.short]
    t0 = time.time()
    encoder = SentenceTransformerEncoder("all-MiniLM-L6-v2", batch_size=args.batch_size, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sanitizer = Sanitizer("PII")
    mech = LaplaceMechanism(epsilon=10.0, unit=1 / 384 ** 0.5)
    encoder.encode(long_docs[:16])
    sanitizer.apply(long_docs[:16])
    setup = time.time() - t0
    rows = [run("long: SciFact abstracts", long_docs, args.chunk, sanitizer, encoder, mech),
            run("short: synth_dataset_v2 sentences", short_docs, args.chunk, sanitizer, encoder, mech)]
    load = os.getloadavg()
    lines = ["# Text-stage ingest cost", "",
             f"Command: `.venv/bin/python {' '.join(['benchmarks/text_ingest.py', *sys.argv[1:]])}` "
             f"(chunks of {args.chunk}, encoder batch {args.batch_size}, CPU, torch threads "
             f"{torch.get_num_threads()}); set-up {setup:.0f} s not timed; load average at the end "
             f"{load[0]:.1f} on a shared 2-core machine (other agents running): absolute figures are noisy, the "
             "ratio comes from interleaved runs of both sides on the same chunks.", "",
             "| documents | n | mean chars | detection ms/doc | encoding ms/doc | private docs/s | plain docs/s | "
             "private / plain throughput | median over chunks |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['set']} | {r['docs']} | {r['mean_chars']:.0f} | {r['detect_ms_per_doc']:.1f} | "
                     f"{r['encode_ms_per_doc']:.1f} | {r['private_docs_per_s']:.1f} | {r['plain_docs_per_s']:.1f} | "
                     f"**{r['ratio']:.2f}×** | {r['ratio_median_chunk']:.2f}× |")
    lines += ["", f"Sanitizer: `{sanitizer!r}`; private side = detection + replacement + encoding + Laplace noise "
              "(ε = 10); target ≥ 0.6× (issue 17)."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
