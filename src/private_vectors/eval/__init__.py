"""The evaluation harness, beside the library: what an attacker recovers from a store and what
retrieval keeps, measured on vectors that went through a real store via
:class:`~private_vectors.PrivateEmbedding`.

The library never imports this package; it uses only the library's public API.

* :mod:`.attacks` — inversion attackers against stored vectors (MLC, k-NN, prior, generative);
  :mod:`.attacks.attribute` and :mod:`.attacks.family` the attribute attackers;
* :mod:`.datasets` — loaders of the shared evaluation data (BEIR, STS, presidio's PII set, …);
  :mod:`.synthetic` generated sentences with and without personal data; :mod:`.vignettes`
  semi-synthetic clinical notes that carry sex and age band beyond the diagnosis;
* :mod:`.metrics` — leakage, confidence, NDCG, correlation (pure functions);
* :func:`run_benchmark` (:mod:`.runner`, :mod:`.tasks`, :mod:`.report`) — the benchmark grid
  (``private-vectors bench --quick`` runs ``benchmarks/configs/quick.json``);
* :func:`audit` (:mod:`.audit`) — what a persisted store leaks, from its owner's side.
"""

from .._lazy import lazy_attributes

__all__ = ["MECHANISM_SPECS", "CachingEncoder", "audit", "build_tasks", "make_embedding", "run_benchmark"]

# Imported on first use (the command line lists ``private-vectors bench`` without loading the harness).
__getattr__, __dir__ = lazy_attributes(__name__, {
    "CachingEncoder": ".cache",
    "audit": ".audit",
    **{name: ".runner" for name in ("MECHANISM_SPECS", "build_tasks", "make_embedding", "run_benchmark")},
})
