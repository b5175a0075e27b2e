"""Sanity check of the retrieval pipeline: clean all-MiniLM-L6-v2 on the full SciFact test set,
ingested through PrivateEmbedding(mechanism="none") into Chroma and queried through the store.
Expected NDCG@10 ≈ 0.645 (published) / 0.649 (measured on this data with sentence-transformers).

Usage: .venv/bin/python benchmarks/scifact_sanity.py [--data-root ../shared/data] [--space ip]
Writes benchmarks/results/scifact_sanity.json. Reuses the full run's embedding cache
(~/.cache/private_vectors/bench) when present: the texts are warmed exactly as the full
config's SciFact task warms them, so nothing is encoded twice.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from private_vectors import PrivateEmbedding
from private_vectors.encoders import load_encoder
from private_vectors.eval import CachingEncoder
from private_vectors.eval.metrics import ndcg_at_k
from private_vectors.eval.runner import build_tasks
from private_vectors.eval.store import VectorStore

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-root", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--space", default="ip", choices=["ip", "cosine", "l2"])
    ap.add_argument("--backend", default="chroma", choices=["chroma", "faiss"])
    args = ap.parse_args()
    t0 = time.time()
    cfg = json.loads((ROOT / "benchmarks" / "configs" / "full.json").read_text())
    cfg["data_root"] = args.data_root
    cfg["datasets"] = [d for d in cfg["datasets"] if d["name"] == "scifact"]
    task = build_tasks(cfg)[0]
    ds = task.retrieval
    assert ds is not None and len(ds.corpus) == 5183 and len(ds.queries) == 300
    enc = CachingEncoder(load_encoder(None), cache_dir=cfg["cache_dir"])
    enc.warm(task.texts())
    ef = PrivateEmbedding(model=enc, mechanism="none", query_transform="none", space=args.space)
    store = VectorStore(ef, args.backend)
    store.add(list(ds.corpus), list(ds.corpus.values()))
    qids = list(ds.queries)
    run = dict(zip(qids, store.search([ds.queries[q] for q in qids], 10), strict=True))
    score = ndcg_at_k(run, ds.qrels, 10)
    out = {"dataset": "scifact (BEIR test, 5183 docs, 300 queries)", "model": enc.model_id,
           "store": args.backend, "space": args.space, "ndcg@10": round(score, 4),
           "expected": "0.645 published, 0.649 measured in shared/README", "seconds": round(time.time() - t0, 1),
           "texts_encoded_now": enc.encoded}
    print(json.dumps(out, indent=2))
    (ROOT / "benchmarks" / "results" / "scifact_sanity.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
