"""Keyed-noise speed: derivation v1 (today's per-vector stream) vs v2 (one batched call).

    nice -n 10 .venv/bin/python benchmarks/keyed.py [--out benchmarks/results/keyed.md]

Reports µs per vector of the keyed noise step alone (seed derivation + stream + mechanism;
no encoder) for spherical Laplace and the concept-subspace Mahalanobis mechanism at
n ∈ {384, 768}, batches of 32 and 256 texts (best of several repeats: the machine may be
shared). Target (issue 15): keyed path ≤ 20 µs/vector at n = 768.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from private_vectors import PrivateEmbedding
from private_vectors.keystream import keyed_perturb
from private_vectors.mechanisms import LaplaceMechanism, MahalanobisMechanism, Mechanism
from private_vectors.random import keyed_stream

DIMS = (384, 768)
BATCHES = (32, 256)


def _v1(mech: Mechanism, X: np.ndarray, key: bytes, ctx: bytes, texts: list[str]) -> np.ndarray:
    """Today's (v1) keyed path: one HMAC + SHAKE-256 stream + mechanism call per vector."""
    return np.vstack([np.atleast_2d(mech.perturb(X[i], rng=keyed_stream(key, b"doc", ctx, t.encode("utf-8"))))
                      for i, t in enumerate(texts)])


def _v2(mech: Mechanism, X: np.ndarray, key: bytes, ctx: bytes, texts: list[str]) -> np.ndarray:
    return keyed_perturb(mech, X, key, ctx, texts)


def _time(fn: Callable[[], object], count: int, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS threads (default 1: multithreaded BLAS stalls on a shared machine)")
    args = parser.parse_args()
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.blas_threads)
    except ImportError:  # pragma: no cover
        pass
    key, ctx = os.urandom(32), b"encoder+mechanism context " * 4
    rows = []
    for n in DIMS:
        rng = np.random.default_rng(0)
        basis = np.linalg.qr(rng.standard_normal((n, 64)))[0]
        mechs = {"laplace": LaplaceMechanism(epsilon=10.0, unit=n ** -0.5, dim=n),
                 "mahalanobis-subspace": MahalanobisMechanism.from_subspace(epsilon=10.0, basis=basis, share=0.9,
                                                                            unit=n ** -0.5)}
        for name, mech in mechs.items():
            for m in BATCHES:
                X = rng.standard_normal((m, n)).astype(np.float32)
                texts = [f"document {i}: a short text of a few words" for i in range(m)]
                v1 = _time(lambda mech=mech, X=X, texts=texts: _v1(mech, X, key, ctx, texts), m, max(2, args.repeats // 2))
                v2 = _time(lambda mech=mech, X=X, texts=texts: _v2(mech, X, key, ctx, texts), m, args.repeats)
                rows.append((name, n, m, v1, v2))
                print(f"{name:22s} n={n:4d} batch={m:4d}  v1 {v1:7.1f} µs/vec  v2 {v2:6.1f} µs/vec  ({v1 / v2:.1f}x)",
                      flush=True)
    # end to end through PrivateEmbedding.embed_array (fake 768-d encoder, Laplace): keyed minus fresh noise
    texts = [f"document {i}: a short text of a few words" for i in range(256)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        keyed_ef = PrivateEmbedding(model="fake:768", eps=10, key=os.urandom(32))
        fresh_ef = PrivateEmbedding(model="fake:768", eps=10)
        t_keyed = _time(lambda: keyed_ef.embed_array(texts), len(texts), args.repeats)
        t_fresh = _time(lambda: fresh_ef.embed_array(texts), len(texts), args.repeats)
    print(f"embed_array n=768 batch=256: keyed {t_keyed:.1f} µs/vec, fresh {t_fresh:.1f} µs/vec", flush=True)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    lines = [
        "# Keyed noise: µs per vector, derivation v1 vs v2",
        "",
        "Command: `nice -n 10 .venv/bin/python benchmarks/keyed.py --out benchmarks/results/keyed.md`",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end (shared with other jobs: figures are noisy; "
        f"best of repeats; BLAS limited to {args.blas_threads} thread(s)).",
        "",
        "Keyed noise step only (seed derivation, stream, mechanism; no encoder). v1 = one HMAC-SHA256 + "
        "SHAKE-256 stream + `perturb` call per vector (collections written before issue 16); v2 = one "
        "`perturb` call per batch with a SHAKE-128 keyed stream per text (`private_vectors.keystream`). "
        "Target: ≤ 20 µs/vector at n = 768.",
        "",
        "| mechanism | n | batch | v1 µs/vector | v2 µs/vector | speed-up |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {name} | {n} | {m} | {v1:.1f} | {v2:.1f} | {v1 / v2:.1f}× |" for name, n, m, v1, v2 in rows]
    lines += ["", "End to end, `PrivateEmbedding(model=\"fake:768\", eps=10).embed_array` on 256 texts (Laplace; "
              "the fake encoder's cost is in both): keyed (v2) "
              f"{t_keyed:.1f} µs/vector, fresh noise {t_fresh:.1f} µs/vector: the key costs "
              f"{t_keyed - t_fresh:.1f} µs/vector."]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
