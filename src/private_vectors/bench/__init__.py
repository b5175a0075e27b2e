"""The benchmark harness: retrieval/STS utility and inversion leakage measured on vectors
that went through a real store (Chroma, optionally FAISS) via :class:`PrivateEmbedding`.

``private-vectors bench --quick`` runs the small grid of ``benchmarks/configs/quick.json``;
see :func:`run_benchmark` and :mod:`private_vectors.bench.report`.
"""

from .cache import CachingEncoder
from .runner import MECHANISM_SPECS, build_tasks, make_embedding, run_benchmark

__all__ = ["MECHANISM_SPECS", "CachingEncoder", "build_tasks", "make_embedding", "run_benchmark"]
