"""Key-holder retrieval of a sealed store when the query sent to the server is noised too.

Against a remote Chroma (``HttpClient``) the server sees each query vector. Under the default
``query="clean"`` that is the clean query vector; ``PrivateEmbedding(query="noised",
query_eps=ε_q)`` sends a noisy one (fresh noise per call; ``query="keyed"``: the same noise for
the same query) and the key
holder still re-ranks the K noisy candidates by the exact vectors against the *clean* query in
its own process (:mod:`private_vectors.integrations.chroma_sealed`). This script measures what the
noised query costs in retrieval: per corpus (SciFact, NFCorpus, the corpus alone: no distractors)
and ε of the stored vectors, NDCG@10 of the clean store, of the noisy ranking, and of the key
holder at the K rule's K (:func:`~private_vectors.sealed.candidate_count`, which reads the
stored vectors' ε only) and at fixed K, for a clean query and for noised ones at several ε_q,
with candidate recall@K (share of the clean top 10 inside the noisy top K).

The vectors are the library's: ``PrivateEmbedding(eps=ε, key=..., query=..., query_eps=...)``
with the packaged all-MiniLM-L6-v2, Laplace, the default geometry, no text stage, through
``pipeline.embed_documents(texts, exact=True)`` and ``pipeline.embed_queries(texts, exact=True)``;
rankings by brute force in the store's space (what an HNSW index approximates). The encoder's
vectors are cached under ``--cache-dir`` (npy files, never committed).

Run::

    nice -n 10 .venv/bin/python benchmarks/sealed_noised_query.py --cache-dir DIR
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
import warnings
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import numpy as np
from _shared import DATA, RESULTS

OUT = RESULTS / "sealed_retrieval"
CORPORA = ("scifact", "nfcorpus")
EPS = (5.0, 10.0, 20.0)
QUERY_EPS = (None, 20.0, 10.0, 5.0)  # None: the clean query (the default policy)
KS = (200, 1000)
KEY = "sealed-noised-query-benchmark-key-01"  # a fixed public key and salt: the noise is reproducible
SALT = b"sealed-noised-salt-01"


def scores(Q: np.ndarray, X: np.ndarray, space: str) -> np.ndarray:
    """Similarity of every row of X to every query in the store's space (cosine: the default)."""
    if space != "cosine":
        raise SystemExit(f"this script ranks in cosine space only, not {space!r}")
    unit = lambda m: m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-30)  # noqa: E731
    return unit(np.asarray(Q, dtype=np.float32)) @ unit(np.asarray(X, dtype=np.float32)).T


def topk(S: np.ndarray, k: int) -> np.ndarray:
    part = np.argpartition(-S, k - 1, axis=1)[:, :k]
    return np.take_along_axis(part, np.argsort(-np.take_along_axis(S, part, axis=1), axis=1, kind="stable"), axis=1)


def ranks(S: np.ndarray) -> np.ndarray:
    """Each document's position in its query's ranking by ``S`` (0 = first)."""
    order = np.argsort(-S, axis=1, kind="stable")
    out = np.empty_like(order)
    out[np.arange(order.shape[0])[:, None], order] = np.arange(order.shape[1])[None, :]
    return out


def embedding(eps: float, query_eps: float | None, enc: Any) -> Any:
    """The library's function: keyed noise, no text stage; a noised query at ``query_eps``."""
    from private_vectors import PrivateEmbedding

    policy = {} if query_eps is None else {"query": "noised", "query_eps": query_eps}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateEmbedding(eps=eps, key=KEY, key_salt=SALT, model=enc, **policy)


def ndcg(top: np.ndarray, S: np.ndarray, ds: dict[str, Any]) -> float:
    from private_vectors.eval.metrics import ndcg_at_k

    ids = ds["dids"]
    run = {q: {ids[j]: float(S[r, j]) for j in top[r]} for r, q in enumerate(ds["qids"])}
    return ndcg_at_k(run, ds["qrels"], 10)


def one_draw(ds: dict[str, Any], sent: np.ndarray, clean: np.ndarray, noisy: np.ndarray, exact: np.ndarray,
             space: str, ks: Sequence[int]) -> dict[str, Any]:
    """NDCG@10 of the clean store, of the noisy ranking and of the key holder at each K, with
    candidate recall@K, for one set of sent query vectors."""
    n = len(exact)
    E = scores(clean, exact, space)
    clean_top = topk(E, 10)
    S_noisy = scores(sent, noisy, space)
    rank = ranks(S_noisy)
    out = {"clean": ndcg(clean_top, E, ds), "noisy": ndcg(topk(S_noisy, 10), S_noisy, ds)}
    for K in ks:  # the key holder: the best exact scores among the noisy top K
        top = topk(np.where(rank < min(K, n), E, -np.inf), 10)
        out[f"K{K}"] = {"ndcg": ndcg(top, E, ds),
                        "recall": float(np.mean(np.take_along_axis(rank, clean_top, axis=1) < min(K, n)))}
    return out


def measure(ds: dict[str, Any], eps: float, enc: Any, draws: int) -> list[dict[str, Any]]:
    """One row per query policy at this ε of the stored vectors; a noised query draws fresh noise
    per call, so its row is the mean of ``draws`` draws (with the range of the key holder's NDCG)."""
    from private_vectors.sealed import candidate_count

    pipe = embedding(eps, None, enc).pipeline
    _, noisy, exact = pipe.embed_documents(ds["docs"], exact=True)
    n = len(ds["docs"])
    rule_k = candidate_count(10, eps, n)
    ks = (rule_k, *KS)
    rows = []
    for qe in QUERY_EPS:
        runs = [one_draw(ds, *embedding(eps, qe, enc).pipeline.embed_queries(ds["queries"], exact=True), noisy, exact,
                         pipe.space, ks) for _ in range(1 if qe is None else draws)]
        row = {"query_eps": qe, "rule_k": rule_k, "n": n, "draws": len(runs),
               "clean": runs[0]["clean"], "noisy": float(np.mean([r["noisy"] for r in runs]))}
        for K in ks:
            got = [r[f"K{K}"]["ndcg"] for r in runs]
            row[f"K{K}"] = {"ndcg": float(np.mean(got)), "min": min(got), "max": max(got),
                            "recall": float(np.mean([r[f"K{K}"]["recall"] for r in runs]))}
        rows.append(row)
    return rows


def table(name: str, n: int, results: dict[float, list[dict[str, Any]]]) -> list[str]:
    out = [f"## {name}: {n:,} documents (no distractors)", "",
           "| ε (stored) | query sent | clean | noisy | rule K (K/N) | key holder at rule K (× clean, R) | "
           + " | ".join(f"K={K} (× clean, R)" for K in KS) + " |",
           "|---|---|---|---|---|---|" + "---|" * len(KS)]
    for eps, rows in results.items():
        for r in rows:
            cell = lambda c: (f"{c['ndcg']:.3f} ({c['ndcg'] / r['clean']:.3f}×, R {c['recall']:.2f})"  # noqa: E731
                              + (f" [{c['min']:.3f}–{c['max']:.3f}]" if r["draws"] > 1 else ""))
            sent = "clean" if r["query_eps"] is None else f"noised, ε_q = {r['query_eps']:g}"
            at_rule = cell(r["K" + str(r["rule_k"])])
            out.append(f"| {eps:g} | {sent} | {r['clean']:.3f} | {r['noisy']:.3f} | {r['rule_k']:,} "
                       f"({r['rule_k'] / r['n']:.3f}) | {at_rule} | "
                       + " | ".join(cell(r[f"K{K}"]) for K in KS) + " |")
    return out + [""]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--cache-dir", type=Path, required=True, help="where the encoder's vectors are cached")
    p.add_argument("--out", type=Path, default=OUT / "noised_queries.md")
    p.add_argument("--draws", type=int, default=5, help="draws of a noised query's fresh noise (mean reported)")
    args = p.parse_args()
    from private_vectors.encoders import load_encoder
    from private_vectors.eval.cache import CachingEncoder
    from private_vectors.eval.datasets import load_beir

    start = time.perf_counter()
    enc = CachingEncoder(load_encoder(None), cache_dir=args.cache_dir)
    head = subprocess.run(["git", "rev-parse", "--short=8", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = ["# Sealed stores: key-holder retrieval with noised queries", "",
             f"Command: `nice -n 10 .venv/bin/python benchmarks/sealed_noised_query.py --cache-dir DIR --draws {args.draws}` at git `{head}`.",
             "", "The server ranks the noisy vectors against the query it is sent; the key holder re-ranks the top K by "
             "the exact vectors against the clean query. NDCG@10 on the BEIR test queries; clean = the same store without "
             "noise; R = candidate recall@K of the clean top 10. The K rule reads the stored vectors' ε only. "
             f"`query=\"noised\"` draws fresh noise per query: its rows are the mean of {args.draws} draws, "
             "[the range of the key holder's NDCG@10 over them].", ""]
    raw: dict[str, Any] = {}
    for name in CORPORA:
        bm = load_beir(args.data / "retrieval" / name)
        dids, qids = list(bm.corpus), list(bm.queries)
        ds = {"dids": dids, "qids": qids, "docs": [bm.corpus[d] for d in dids],
              "queries": [bm.queries[q] for q in qids], "qrels": bm.qrels}
        enc.warm(ds["docs"] + ds["queries"])
        results = {eps: measure(ds, eps, enc, args.draws) for eps in EPS}
        raw[name] = {str(e): r for e, r in results.items()}
        lines += table(name, len(dids), results)
        print("\n".join(lines[-len(results) * len(QUERY_EPS) - 1:]), flush=True)
    lines.append(f"Wall {time.perf_counter() - start:.0f} s.")
    args.out.write_text("\n".join(lines) + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
