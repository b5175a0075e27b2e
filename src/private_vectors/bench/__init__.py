"""The benchmark harness: retrieval/STS utility and inversion leakage measured on vectors
that went through a real store (Chroma, optionally FAISS) via :class:`PrivateEmbedding`.

``private-vectors bench --quick`` runs the small grid of ``benchmarks/configs/quick.json``;
see :func:`run_benchmark` and :mod:`private_vectors.bench.report`.
"""

from .._lazy import lazy_attributes

__all__ = ["MECHANISM_SPECS", "CachingEncoder", "build_tasks", "make_embedding", "run_benchmark"]

# Imported on first use (the command line lists ``private-vectors bench`` without loading the harness).
__getattr__, __dir__ = lazy_attributes(__name__, {
    "CachingEncoder": ".cache",
    **{name: ".runner" for name in ("MECHANISM_SPECS", "build_tasks", "make_embedding", "run_benchmark")},
})
