"""Noise cost of two source trees side by side: deployed Laplace and diagonal Mahalanobis, n = 768.

    git worktree add /tmp/pv-before <commit>
    nice -n 10 .venv/bin/python benchmarks/noise_ab.py --trees before=/tmp/pv-before/src after=src \\
        --rounds 5 --out benchmarks/results/noise_ab.md

Each round runs every tree once, in turn, in a fresh process (``PYTHONPATH`` = that tree's
``src``), so the trees see the same machine load; a process times µs per vector of batches of
1,024 (median of 15 calls, wall clock and CPU time) and ``torch.randn`` of the same shape (one
thread) as a reference, and counts minor page faults per call. The table gives the median over
rounds. Run with ``--child`` it is the timed process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

N, BATCH, CALLS = 768, 1024, 15


def _child() -> None:
    from private_vectors.mechanisms import LaplaceMechanism, MahalanobisMechanism

    X = np.random.default_rng(1).standard_normal((BATCH, N))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    mask = np.zeros(N)
    mask[np.random.default_rng(0).choice(N, N // 10, replace=False)] = 1.0
    unit = 1 / np.sqrt(N)
    fns = {"laplace": LaplaceMechanism(epsilon=10, unit=unit).perturb,
           "mahalanobis (diagonal)": MahalanobisMechanism(epsilon=10, sigma=mask, unit=unit).perturb}
    try:
        import torch

        torch.set_num_threads(1)
        fns["torch.randn (reference)"] = lambda _X: torch.randn(BATCH, N)
    except ImportError:
        pass
    out = {}
    for name, fn in fns.items():
        fn(X)
        wall, cpu = [], []
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(CALLS):
            t0, c0 = time.perf_counter(), time.process_time()
            fn(X)
            wall.append((time.perf_counter() - t0) / BATCH * 1e6)
            cpu.append((time.process_time() - c0) / BATCH * 1e6)
        faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / CALLS
        out[name] = {"wall": float(np.median(wall)), "cpu": float(np.median(cpu)), "faults": faults}
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trees", nargs="+", default=[f"current={Path(__file__).parents[1] / 'src'}"],
                        help="label=path/to/src, one per tree")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=None)
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if args.child:
        _child()
        return
    trees = [t.split("=", 1) for t in args.trees]
    runs: dict[str, list[dict[str, dict[str, float]]]] = {label: [] for label, _ in trees}
    loads = []
    for _ in range(args.rounds):
        for label, src in trees:
            loads.append(os.getloadavg()[0])
            env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
            res = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True,
                                 check=True)
            runs[label].append(json.loads(res.stdout.strip().splitlines()[-1]))
    lines = ["# Noise cost, trees side by side", "",
             f"Command: `.venv/bin/python benchmarks/noise_ab.py --trees {' '.join(args.trees)} --rounds {args.rounds}`",
             "", f"n = {N}, batches of {BATCH}, {CALLS} calls per process, {args.rounds} rounds (trees in turn); "
             f"1-minute load average {min(loads):.1f}–{max(loads):.1f} on {os.cpu_count()} cores. Medians over "
             "rounds of each process's median.", "",
             "| tree | what | µs/vector (wall) | µs/vector (CPU time) | page faults per call |", "|---|---|---|---|---|"]
    for label, _ in trees:
        for name in runs[label][0]:
            w = np.median([r[name]["wall"] for r in runs[label]])
            c = np.median([r[name]["cpu"] for r in runs[label]])
            f = np.median([r[name]["faults"] for r in runs[label]])
            lines.append(f"| {label} | {name} | {w:.2f} | {c:.2f} | {f:.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
