"""Which similarity for perturbed documents? cosine vs L2 vs inner product, with and without
the noise-aware query transform (issue 7), on a real retrieval set with the default model.

Documents are perturbed once per (mechanism, ε) with a fixed seed; queries stay clean (the
default policy). The concept subspace here is estimated inside this script, as in issue 7's
prototype: the top-64 principal directions of Φ(s) − Φ(R(s)) on the presidio PII sentences
(R removes the PII span values), with 90% of the noise trace on it.

    .venv/bin/python benchmarks/space.py --data ../shared/data --out benchmarks/results/space.md
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from private_vectors.encoders import load_encoder
from private_vectors.eval.datasets import load_beir
from private_vectors.eval.metrics import ndcg_at_k
from private_vectors.mechanisms import LaplaceMechanism, MahalanobisMechanism
from private_vectors.retrieval import build_query_transform, scores


def pii_subspace(encoder, pii_path: Path, rank: int) -> np.ndarray:
    rows = json.loads(pii_path.read_text())
    full, removed = [], []
    for r in rows:
        text = r["full_text"]
        spans = sorted(r.get("spans", []), key=lambda s: -s["start_position"])
        cut = text
        for s in spans:
            cut = cut[: s["start_position"]] + cut[s["end_position"]:]
        cut = " ".join(cut.split())
        if cut and cut != text:
            full.append(text)
            removed.append(cut)
    D = encoder.encode(full).astype(np.float64) - encoder.encode(removed).astype(np.float64)
    D -= D.mean(axis=0)
    _, _, Vt = np.linalg.svd(D, full_matrices=False)
    return Vt[:rank].T


def run_query_scores(Q: np.ndarray, Z: np.ndarray, space: str, qids: list[str], dids: list[str],
                     k: int = 100) -> dict[str, dict[str, float]]:
    S = scores(Q, Z, space)
    run = {}
    for i, q in enumerate(qids):
        top = np.argpartition(-S[i], k)[:k]
        run[q] = {dids[j]: float(S[i, j]) for j in top}
    return run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--dataset", default="retrieval/scifact")
    p.add_argument("--eps", type=float, nargs="+", default=[5, 10, 20, 40])
    p.add_argument("--rank", type=int, default=64)
    p.add_argument("--seed", type=int, default=0, help="seed of the document subset")
    p.add_argument("--noise-seed", type=int, default=None, help="seed of the noise (default: --seed)")
    p.add_argument("--n-docs", type=int, default=None,
                   help="subset: every judged document plus random distractors up to this many")
    p.add_argument("--cache", default=None, help="folder to cache embeddings (.npy)")
    p.add_argument("--out", default=None)
    args = p.parse_args()

    data = Path(args.data)
    ds = load_beir(data / args.dataset)
    if args.n_docs:
        ds = ds.subset(n_docs=args.n_docs, seed=args.seed)
    enc = load_encoder(None)
    dids, qids = list(ds.corpus), list(ds.queries)
    t0 = time.time()
    noise_seed = args.seed if args.noise_seed is None else args.noise_seed
    cache = Path(args.cache) / f"{ds.name}-{args.n_docs}-{args.seed}" if args.cache else None
    if cache and (cache / "docs.npy").exists():
        X, Q = np.load(cache / "docs.npy"), np.load(cache / "queries.npy")
    else:
        X = enc.encode([ds.corpus[d] for d in dids]).astype(np.float64)
        Q = enc.encode([ds.queries[q] for q in qids]).astype(np.float64)
        if cache:
            cache.mkdir(parents=True, exist_ok=True)
            np.save(cache / "docs.npy", X)
            np.save(cache / "queries.npy", Q)
    t_enc = time.time() - t0
    V = pii_subspace(enc, data / "pii" / "synth_dataset_v2.json", args.rank)
    n = X.shape[1]
    unit = 1 / math.sqrt(n)
    lines = [f"# Collection space for perturbed documents ({ds.name}, {len(dids)} docs, {len(qids)} queries)",
             "", f"Command: `.venv/bin/python benchmarks/space.py --data {args.data} --dataset {args.dataset}"
             f"{' --n-docs ' + str(args.n_docs) if args.n_docs else ''}"
             f"{' --noise-seed ' + str(noise_seed) if args.noise_seed is not None else ''}{' --out ' + args.out if args.out else ''}`", "",
             f"Model all-MiniLM-L6-v2 (n={n}), unit 1/sqrt(n), subset seed {args.seed}, noise seed {noise_seed}, clean queries; NDCG@10. "
             f"Concept subspace: rank {args.rank} PCA of Phi(s) - Phi(R(s)) on the presidio PII set, 90% of the "
             f"trace. Encoding took {t_enc:.0f} s.", ""]
    clean = {sp: ndcg_at_k(run_query_scores(Q, X, sp, qids, dids), ds.qrels) for sp in ("ip", "cosine", "l2")}
    lines += ["| mechanism | ε | query transform | ip | cosine | l2 |", "|---|---|---|---|---|---|",
              f"| none (clean) | — | none | {clean['ip']:.3f} | {clean['cosine']:.3f} | {clean['l2']:.3f} |"]
    proj_clean = build_query_transform("project", MahalanobisMechanism.from_subspace(
        epsilon=10, basis=V, share=0.9, unit=unit)).apply(Q)
    pc = {sp: ndcg_at_k(run_query_scores(proj_clean, X, sp, qids, dids), ds.qrels) for sp in ("ip", "cosine", "l2")}
    lines.append(f"| none (clean) | — | project (rank {args.rank}) | {pc['ip']:.3f} | {pc['cosine']:.3f} | "
                 f"{pc['l2']:.3f} |")
    for eps in args.eps:
        mechs = {"laplace": LaplaceMechanism(epsilon=eps, unit=unit, random_state=noise_seed),
                 "concept subspace": MahalanobisMechanism.from_subspace(epsilon=eps, basis=V, share=0.9, unit=unit,
                                                                        random_state=noise_seed)}
        for name, mech in mechs.items():
            Z = mech.perturb(X).astype(np.float64)
            kinds = ["none"] if name == "laplace" else ["none", "project", "wiener"]
            for kind in kinds:
                Qt = build_query_transform(kind, mech).apply(Q).astype(np.float64)
                row = {sp: ndcg_at_k(run_query_scores(Qt, Z, sp, qids, dids), ds.qrels)
                       for sp in ("ip", "cosine", "l2")}
                lines.append(f"| {name} | {eps:g} | {kind} | {row['ip']:.3f} | {row['cosine']:.3f} | "
                             f"{row['l2']:.3f} |")
                print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
