"""Leakage of the no-vector prior baseline for a harness config (same splits as the harness).

The prior attacker guesses each victim's tokens from their training frequencies alone, so
its leakage does not depend on the mechanism: one figure per data set and seed. Any attack
row of the harness is informative only above it.

Usage: .venv/bin/python benchmarks/prior_baseline.py quick|full [--data-root ../shared/data]
Writes benchmarks/results/<name>/prior.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from private_vectors.eval.attacks import PriorAttacker
from private_vectors.eval.cli import _resolve_data_root, find_config
from private_vectors.eval.runner import build_tasks
from private_vectors.eval.tasks import attack

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--data-root", default=None)
    args = ap.parse_args()
    path = find_config(args.config)
    cfg = json.loads(path.read_text())
    _resolve_data_root(cfg, path, args.data_root)
    rows = ["| data set | leakage set | sensitive tokens | n sentences | prior leakage (×100, top-k) | "
            "prior confidence (×100) |", "|---|---|---|---|---|---|"]
    for task in build_tasks(cfg):
        lk = task.leakage
        assert lk is not None
        fake = np.zeros((len(lk.data), 2))
        res = [attack(fake, lk.data.tokens, {"prior": lambda s: PriorAttacker()}, seed=int(seed),
                      train_share=lk.train_share) for seed in cfg.get("seeds", [0])]
        leak = np.array([r["leakage_prior"] for r in res])
        conf = np.array([r["confidence_prior"] for r in res])
        rows.append(f"| {task.name} | {lk.name} | {lk.data.token_source} | {len(lk.data)} | "
                    f"{100 * leak.mean():.2f} ± {100 * leak.std():.2f} | {100 * conf.mean():.2f} |")
    text = ("Leakage of an attacker that ignores the vectors and guesses the most frequent training "
            f"tokens (config `{cfg.get('name')}`, same splits as the harness, seeds {cfg.get('seeds')}).\n\n"
            + "\n".join(rows) + "\n")
    out = ROOT / "benchmarks" / "results" / cfg.get("name", path.stem) / "prior.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
