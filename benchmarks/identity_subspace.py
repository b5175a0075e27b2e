"""Does a noise subspace built from *which value* a sentence holds beat Laplace at equal utility?

The built-in concept subspace is estimated from Φ(s) − Φ(R(s)): it tells *whether* a sentence
holds the concept. The README's Findings explain the adaptive attacker's success by that: the
token identity lives outside the subspace. This benchmark tests the obvious fix. It estimates
an *identity* subspace from swap pairs — one template filled twice with different values
(:func:`private_vectors.fitted.generators.generate_swaps`), V = top-r right singular vectors
of Φ(s₁) − Φ(s₂) — and puts ``share`` of the Mahalanobis noise trace on it
(``MahalanobisMechanism.from_subspace``, the same Σ form as the concept rows).

Every cell goes through the harness's store path (:class:`private_vectors.eval.tasks.Task`:
Chroma, plain vs noise-aware queries, vectors read back) with adaptive attackers (raw,
projected and Wiener views; the best is reported), next to Laplace and the built-in concept
subspace with the query transform, on the full grid's data subsets.

Usage::

    .venv/bin/python benchmarks/identity_subspace.py [--datasets scifact,sts12,ddxplus] [--seeds 0,1]
        [--rows 64:0.9,128:0.7] [--references laplace,concept-subspace+qt] [--out DIR]

Writes ``benchmarks/results/identity_subspace/`` (results.jsonl, table.md, equal_utility.md,
Pareto PNGs) with the harness's report.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from pathlib import Path

import numpy as np
import torch

from private_vectors import PrivateEmbedding
from private_vectors.encoders import load_encoder
from private_vectors.eval.cache import CachingEncoder
from private_vectors.eval.report import write_report
from private_vectors.eval.runner import (
    adaptive_transforms,
    build_attackers,
    build_tasks,
    cell_record,
    git_sha,
    make_embedding,
    sts_transform,
)
from private_vectors.fitted.generators import generate_swaps
from private_vectors.mechanisms import MahalanobisMechanism

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ROWS = "64:0.9,128:0.7"
"""Identity-subspace rows, ``rank:share`` (share of the noise trace on the subspace)."""


def parse_rows(text: str) -> dict[str, tuple[int, float]]:
    """``"64:0.9,128:0.7"`` → {"identity-64-0.9+qt": (64, 0.9), ...}."""
    rows = {}
    for item in text.split(","):
        rank, share = item.split(":")
        rows[f"identity-{int(rank)}-{float(share):g}+qt"] = (int(rank), float(share))
    return rows


def identity_basis(encoder: CachingEncoder, concept: str, n_pairs: int = 3000, seed: int = 0) -> np.ndarray:
    """Orthonormal right singular vectors (n, n) of the swap differences, most energy first."""
    pairs = list(generate_swaps(concept, n_pairs, random_state=seed))
    first = encoder.encode([a for a, _ in pairs])
    second = encoder.encode([b for _, b in pairs])
    _, _, vt = np.linalg.svd(np.asarray(first - second, dtype=np.float64), full_matrices=False)
    return vt.T


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="scifact,sts12,ddxplus")
    ap.add_argument("--seeds", default="0", help="comma-separated noise/attacker seeds")
    ap.add_argument("--rows", default=DEFAULT_ROWS, help="identity rows as rank:share, comma-separated")
    ap.add_argument("--references", default="laplace,concept-subspace+qt",
                    help="grid rows to run beside them (laplace is the equal-utility reference)")
    ap.add_argument("--epsilons", default="5,10,20")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "identity_subspace"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = json.loads((ROOT / "benchmarks" / "configs" / "full.json").read_text())
    cfg["data_root"] = str((ROOT / cfg["data_root"]).resolve())
    wanted = args.datasets.split(",")
    cfg["datasets"] = [d for d in cfg["datasets"] if d["name"] in wanted]
    cfg["attackers"] = {"mlc-enc": {"epochs": 20, "batch_size": 64}, "nn": {"k": 5}, "prior": {}}
    enc = CachingEncoder(load_encoder(cfg.get("model")), cache_dir=cfg["cache_dir"])
    tasks = build_tasks(cfg)
    for t in tasks:
        enc.warm(t.texts())
    attackers = {name: f for name, (f, _where) in build_attackers(cfg, enc).items()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = out / "results.jsonl"
    t0, identity_rows = time.time(), parse_rows(args.rows)
    meta = {"config": "identity_subspace", "git_sha": git_sha(), "model": enc.model_id, "dim": enc.dim,
            "prior_based": ["mlc-enc"]}
    with lines.open("w", encoding="utf-8") as fh:
        for task in tasks:
            concept = task.meta["concept"]
            basis = identity_basis(enc, concept)
            for seed, eps in itertools.product([int(s) for s in args.seeds.split(",")],
                                               [float(e) for e in args.epsilons.split(",")]):
                rows = {m: make_embedding(m, eps, seed, enc, concept, cfg) for m in args.references.split(",")}
                for name, (rank, share) in identity_rows.items():
                    mech = MahalanobisMechanism.from_subspace(epsilon=eps, basis=basis[:, :rank], share=share,
                                                              unit=1 / math.sqrt(enc.dim), random_state=seed)
                    rows[name] = PrivateEmbedding(model=enc, mechanism=mech, query_transform="auto", random_state=seed)
                for name, ef in rows.items():
                    t1 = time.time()
                    metrics = task.run(ef, attackers, seed=seed, sts_transform=sts_transform(name, task, ef),
                                       attack_transforms=adaptive_transforms(ef, cfg))
                    rec = cell_record(meta, task, name, eps, seed, "chroma", metrics, time.time() - t1)
                    fh.write(json.dumps(rec) + "\n")
                    fh.flush()
                    print(f"{task.name} {name} ε={eps:g}: utility {metrics['utility']:.3f}, "
                          f"mlc-enc {metrics.get('leakage_mlc-enc', math.nan):.3f}, "
                          f"nn {metrics.get('leakage_nn', math.nan):.3f}", flush=True)
    write_report(lines, out)
    print(f"wrote {out} in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
