"""Accelerator check: the encoder, FAISS and the learned tagger on a GPU against the CPU, same machine, same run.

    .venv/bin/python benchmarks/gpu.py [--out benchmarks/results/gpu.md] [--docs 4000] [--vectors 200000] [--parts encoder,faiss,tagger,stage]

Needs a CUDA GPU, torch with CUDA and the FAISS GPU build (``pip install
'private-vectors[faiss-gpu]'`` in place of ``faiss-cpu``); a part whose piece is missing is
reported as skipped, with the reason. Under 10 minutes on one GPU and 16 cores. It measures:

1. the default encoder (all-MiniLM-L6-v2) through ``PrivateEmbedding(sanitize=None)``: documents
   per second on the CPU and on the GPU, and the largest difference between the two runs'
   keyed-noise vectors (the noise is keyed, so only the encoder's float differences remain);
2. ``PrivateFaissIndex`` flat and IVF, built from the same protected vectors on the CPU and on
   the GPU: build and search time, the share of top-10 ids equal, the largest score difference;
3. the learned tagger (the default detector) on the CPU and on the GPU (``TaggerModel(device=)``):
   documents per second on sentences and on documents of ten sentences, and the share of
   documents whose spans are the same on both (what ``device="cuda"`` must keep for a mixed
   cluster to redact alike);
4. the whole default text stage (recognizers, presidio and spaCy on the CPU, the tagger where
   ``device=`` puts it): documents per second with the tagger on the CPU and on the GPU, and the
   share of documents redacted the same.

Writes a markdown table to ``--out`` and prints it.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

KEY = "gpu-benchmark-key-not-secret-4f1c"


def _device() -> tuple[str, str | None]:
    try:
        import torch
    except ImportError:
        return "no torch", "torch is not installed"
    if not torch.cuda.is_available():
        return "CPU only", "torch sees no CUDA device"
    return torch.cuda.get_device_name(0), None


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("torch", "transformers", "spacy", "presidio-analyzer", "faiss-cpu", "faiss-gpu-cu12"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            continue
    return ", ".join(found)


def _texts(n: int) -> list[str]:
    from private_vectors.eval.synthetic import synthetic_pii_sentences

    return synthetic_pii_sentences(n, seed=0)


def _encoder_rows(n_docs: int) -> list[str]:
    from private_vectors import PrivateEmbedding
    from private_vectors.encoders.sentence_transformers import SentenceTransformerEncoder

    _, why = _device()
    texts = _texts(n_docs)
    rows = []
    vectors = {}
    for device in ("cpu", "cuda"):
        if device == "cuda" and why:
            rows.append(f"| encoder | cuda | skipped: {why} | | |")
            continue
        enc = SentenceTransformerEncoder(device=device)
        ef = PrivateEmbedding(model=enc, eps=10, key=KEY, sanitize=None)
        count = n_docs if device == "cuda" else min(n_docs, 1000)
        ef.embed_array(texts[:64])  # warm-up
        t0 = time.perf_counter()
        vectors[device] = ef.embed_array(texts[:count])
        dt = time.perf_counter() - t0
        rows.append(f"| encoder + keyed noise | {device} | {count / dt:.0f} docs/s | {count} docs | |")
    if "cuda" in vectors:
        m = min(len(vectors["cpu"]), len(vectors["cuda"]))
        diff = float(np.abs(vectors["cpu"][:m] - vectors["cuda"][:m]).max())
        rows.append(f"| encoder, CPU vs GPU vectors | | max abs difference {diff:.2e} | {m} docs | |")
    return rows


def _faiss_rows(n_vectors: int) -> list[str]:
    try:
        import faiss
    except ImportError:
        return ["| FAISS | | skipped: faiss is not installed | | |"]
    from private_vectors.integrations.faiss import gpu_available

    rows = []
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_vectors, 384)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    from private_vectors.mechanisms import LaplaceMechanism

    X = LaplaceMechanism(epsilon=10, unit=1 / np.sqrt(384), random_state=0).perturb(X)
    Q = X[rng.choice(n_vectors, 1000, replace=False)] + 0.01 * rng.standard_normal((1000, 384)).astype(np.float32)
    results: dict[tuple[str, str], Any] = {}
    for kind in ("flat", "ivf"):
        for device in ("cpu", "gpu"):
            if device == "gpu" and not gpu_available():
                rows.append(f"| FAISS {kind} | gpu | skipped: no FAISS GPU build or no GPU | | |")
                continue
            t0 = time.perf_counter()
            if kind == "flat":
                index = faiss.IndexFlatIP(384)
            else:
                quant = faiss.IndexFlatIP(384)
                index = faiss.IndexIVFFlat(quant, 384, 1024, faiss.METRIC_INNER_PRODUCT)
                index.train(X[:100_000])  # on the CPU, as PrivateFaissIndex does, then copied
                index.nprobe = 16
            if device == "gpu":
                res = faiss.StandardGpuResources()
                index = faiss.index_cpu_to_gpu(res, 0, index)
            index.add(X)
            build = time.perf_counter() - t0
            t0 = time.perf_counter()
            scores, ids = index.search(Q, 10)
            search = time.perf_counter() - t0
            results[(kind, device)] = (scores, ids)
            rows.append(f"| FAISS {kind} | {device} | build {build:.2f} s, search {1000 / search:.0f} queries/s "
                        f"| {n_vectors} vectors | |")
        if (kind, "gpu") in results:
            (cs, ci), (gs, gi) = results[(kind, "cpu")], results[(kind, "gpu")]
            same = float((ci == gi).mean())
            rows.append(f"| FAISS {kind}, CPU vs GPU | | top-10 ids equal {same:.4f}, max score diff "
                        f"{float(np.abs(cs - gs).max()):.2e} | 1000 queries | |")
    return rows


def _timed(fn: Any, texts: list[str]) -> tuple[Any, float]:
    """``fn(texts)`` once to warm up on a few texts, then once timed (the GPU synchronised)."""
    import torch

    fn(texts[:16])
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    sync()
    t0 = time.perf_counter()
    out = fn(texts)
    sync()
    return out, time.perf_counter() - t0


def _where(spans: list[Any]) -> list[tuple[int, int, str]]:
    """A document's spans without their scores (float rounding differs between devices)."""
    return [(s.start, s.end, s.label) for s in spans]


def _tagger_rows(n_docs: int) -> list[str]:
    from private_vectors.text_model import TaggerModel

    _, why = _device()
    sentences = _texts(n_docs)
    documents = [" ".join(sentences[i:i + 10]) for i in range(0, len(sentences), 10)]
    rows = []
    for name, texts in (("sentences", sentences), ("documents of 10 sentences", documents)):
        found = {}
        for device in ("cpu", "cuda"):
            if device == "cuda" and why:
                rows.append(f"| tagger, {name} | cuda | skipped: {why} | | |")
                continue
            found[device], dt = _timed(TaggerModel(device=device).spans, texts)
            rows.append(f"| tagger, {name} | {device} | {len(texts) / dt:.0f} docs/s | {len(texts)} docs | |")
        if "cuda" in found:
            same = sum(_where(a) == _where(b) for a, b in zip(found["cpu"], found["cuda"], strict=True)) / len(texts)
            rows.append(f"| tagger, {name}, CPU vs GPU spans | | documents with the same spans {same:.4f} "
                        f"| {len(texts)} docs | |")
    return rows


def _text_stage_rows(n_docs: int) -> list[str]:
    from private_vectors import PrivateEmbedding

    _, why = _device()
    texts = _texts(n_docs)
    rows, redacted = [], {}
    for device in ("cpu", "cuda"):
        if device == "cuda" and why:
            rows.append(f"| text stage (PII, tagger on cuda) | cuda | skipped: {why} | | |")
            continue
        try:
            ef = PrivateEmbedding(concept="PII", model="fake:384", eps=10, key=KEY, device=device)
            redacted[device], dt = _timed(ef.sanitize_documents, texts)
        except ImportError as exc:  # presidio or spaCy missing: the stage cannot be built
            return [f"| text stage (PII) | | skipped: {exc} | | |"]
        rows.append(f"| text stage (PII, tagger on {device}, one process) | {device} | {n_docs / dt:.0f} docs/s "
                    f"| {n_docs} docs | |")
    if "cuda" in redacted:
        same = sum(a == b for a, b in zip(redacted["cpu"], redacted["cuda"], strict=True)) / n_docs
        rows.append(f"| text stage, tagger CPU vs GPU | | documents redacted the same {same:.4f} | {n_docs} docs | |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "gpu.md"))
    parser.add_argument("--docs", type=int, default=4000)
    parser.add_argument("--vectors", type=int, default=200_000)
    parser.add_argument("--parts", default="encoder,faiss,tagger,stage",
                        help="comma-separated parts to run (default: all four)")
    args = parser.parse_args()
    parts = {"encoder": lambda: _encoder_rows(args.docs), "faiss": lambda: _faiss_rows(args.vectors),
             "tagger": lambda: _tagger_rows(min(args.docs, 1000)), "stage": lambda: _text_stage_rows(min(args.docs, 500))}
    chosen = args.parts.split(",")
    if not chosen or any(c not in parts for c in chosen):
        parser.error(f"--parts: expected names from {sorted(parts)}, received {args.parts!r}")
    t0 = time.perf_counter()
    name, why = _device()
    rows = [row for c in chosen for row in parts[c]()]
    lines = ["# GPU check", "", f"Command: `.venv/bin/python benchmarks/gpu.py --docs {args.docs} --vectors "
             f"{args.vectors}" + (f" --parts {args.parts}" if args.parts != parser.get_default("parts") else "")
             + "`", "", f"Machine: {platform.machine()}, {os.cpu_count()} cores, GPU: {name}, {_versions()}"
             + (f" ({why})" if why else "") + f". Total {time.perf_counter() - t0:.0f} s.", "",
             "| part | device | figure | size | |", "|---|---|---|---|---|", *rows]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
