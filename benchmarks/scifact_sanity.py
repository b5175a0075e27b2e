"""Sanity check of the retrieval pipeline: clean all-MiniLM-L6-v2 on the full SciFact test set,
ingested through PrivateEmbedding(mechanism="none") into Chroma and queried through the store.
Expected NDCG@10 ≈ 0.645 (published) / 0.649 (measured on this data with sentence-transformers).

Usage: .venv/bin/python benchmarks/scifact_sanity.py [--data-root ../shared/data] [--space ip]
Writes benchmarks/results/scifact_sanity.json. Uses the harness's embedding cache when present.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from private_vectors import PrivateEmbedding
from private_vectors.bench import CachingEncoder
from private_vectors.bench.tasks import VectorStore
from private_vectors.datasets import load_beir
from private_vectors.encoders import load_encoder
from private_vectors.metrics import ndcg_at_k

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-root", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--space", default="ip", choices=["ip", "cosine", "l2"])
    ap.add_argument("--backend", default="chroma", choices=["chroma", "faiss"])
    args = ap.parse_args()
    t0 = time.time()
    ds = load_beir(Path(args.data_root) / "retrieval" / "scifact")
    enc = CachingEncoder(load_encoder(None), cache_dir=Path("~/.cache/private_vectors/bench/sanity"))
    enc.warm(list(ds.corpus.values()) + list(ds.queries.values()))
    ef = PrivateEmbedding(model=enc, mechanism="none", query_transform="none", space=args.space)
    store = VectorStore(ef, args.backend)
    store.add(list(ds.corpus), list(ds.corpus.values()))
    qids = list(ds.queries)
    run = dict(zip(qids, store.search([ds.queries[q] for q in qids], 10), strict=True))
    score = ndcg_at_k(run, ds.qrels, 10)
    out = {"dataset": "scifact (BEIR test, 5183 docs, 300 queries)", "model": enc.model_id,
           "store": args.backend, "space": args.space, "ndcg@10": round(score, 4),
           "expected": "0.645 published, 0.649 measured in shared/README", "seconds": round(time.time() - t0, 1)}
    print(json.dumps(out, indent=2))
    (ROOT / "benchmarks" / "results" / "scifact_sanity.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
