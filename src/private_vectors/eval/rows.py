"""The grid's rows: what each mechanism row switches on, and the PrivateEmbedding of one cell.

A row (:data:`MECHANISM_SPECS`) names a noise mechanism, an optional concept fit, the presidio
anchor's text stage or the project's own (keyed with a per-seed public benchmark key), and a
detector; :func:`make_embedding` builds the cell's PrivateEmbedding at ε, for the store kind the
cell writes (``seal``: a keyed row is sealed only for the ``"sealed"`` store kind).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

__all__ = ["MECHANISM_SPECS", "bench_key", "bench_salt", "fitted_concept", "make_embedding", "row_stages",
           "sealable"]


MECHANISM_SPECS: dict[str, dict[str, Any]] = {
    "none": {"mechanism": "none"},
    "laplace": {"mechanism": "laplace"},
    "purkayastha": {"mechanism": "purkayastha"},
    "gaussian": {"mechanism": "gaussian"},
    "sparse-diagonal": {"estimator": "mask", "mechanism": "mahalanobis"},
    "concept-subspace": {"estimator": "subspace", "mechanism": "mahalanobis"},
    "concept-subspace+qt": {"estimator": "subspace", "mechanism": "mahalanobis", "query_transform": "auto"},
    "cape": {"learned": "cape"},
    "textcrafter": {"learned": "textcrafter"},
    "presidio": {"mechanism": "none", "text": "presidio"},
    "presidio+laplace": {"mechanism": "laplace", "text": "presidio"},
    # the project's own text stage, inside PrivateEmbedding (keyed with a per-seed bench key)
    "redact": {"mechanism": "none", "sanitize": "redact"},
    "redact+laplace": {"mechanism": "laplace", "sanitize": "redact"},
    "redact+concept": {"estimator": "subspace", "mechanism": "mahalanobis", "sanitize": "redact"},
    "surrogate": {"mechanism": "none", "sanitize": "surrogate"},
    "surrogate+laplace": {"mechanism": "laplace", "sanitize": "surrogate"},
    "surrogate+concept": {"estimator": "subspace", "mechanism": "mahalanobis", "sanitize": "surrogate"},
    # the same text stage with the learned tagger beside the recognizers (detector="model")
    "redact-model": {"mechanism": "none", "sanitize": "redact", "detector": "model"},
    "redact-model+laplace": {"mechanism": "laplace", "sanitize": "redact", "detector": "model"},
}
"""Grid rows. Concept rows fit the data set's concept with the given estimator
(``private_vectors.fitted.fit_concept``); only ``+qt`` uses the noise-aware query transform.
``cape``/``textcrafter`` load the packaged learned artefacts (``mechanisms.load_learned``) with
ε overridden (CAPE: its Laplace budget ε; TextCrafter: radius = ε/√n, the project's unit).
A ``"text"`` entry names a text stage (:data:`private_vectors.eval.text_rows.TEXT_STAGES`) that
rewrites every stored text before it is encoded: ``presidio`` is the practitioner's anchor
(presidio's default recognizers, typed placeholders). A row whose ``mechanism`` is ``"none"``
runs only at ε = ∞ (no noise).

A ``"sanitize"`` entry is the **project's** text stage: the row's PrivateEmbedding is built with
``sanitize=<policy>`` and an explicit per-seed benchmark key (:func:`bench_key`), so documents
are sanitized once on their way into the store (``prepare_documents``: the sanitized text is
embedded and stored) and queries go through the same Sanitizer (``apply_queries``, same key) as
in real use. ``redact+concept`` / ``surrogate+concept`` add the concept-subspace Mahalanobis
noise (no query transform, like ``concept-subspace``). A ``"detector"`` entry (``redact-model``
rows) builds that Sanitizer with ``detector=...`` and no time limit (the rows measure what is
found, not how fast)."""


def _check_role(role: str) -> None:
    if role not in ("victim", "aux"):
        raise ValueError(f"role: expected 'victim' or 'aux', received {role!r}")


def bench_key(seed: int, role: str = "victim") -> str:
    """The explicit key of a keyed grid row: fixed per seed and role (``"victim"``: the store's
    owner; ``"aux"``: the key-less attacker's own key, a different one). Benchmark keys only —
    public strings, never written to results (the PrivateEmbedding redacts them anyway)."""
    _check_role(role)
    return f"private-vectors bench key, {role}, seed {int(seed)} (benchmark only, not a secret)"


def bench_salt(seed: int, role: str = "victim") -> bytes:
    """The scrypt salt of a keyed grid row: public, derived from the seed and role like
    :func:`bench_key`, so a keyed row's noise is the same in every process for the same seed
    (a library user's salt stays random per collection: ``PrivateEmbedding(key_salt=None)``)."""
    _check_role(role)
    return hashlib.sha256(f"private-vectors bench salt, {role}, seed {int(seed)}".encode()).digest()[:16]


def row_stages(mechanism: str) -> dict[str, Any]:
    """The stages a grid row switches on, for the ablation table: text stage, concept
    (erasure) stage, noise mechanism, query transform. Unknown rows: noise = their name."""
    spec = MECHANISM_SPECS.get(mechanism, {"mechanism": mechanism})
    noise = spec.get("learned") or spec.get("mechanism", mechanism)
    if spec.get("estimator"):
        noise = f"{noise} ({spec['estimator']})"
    detector = f", detector={spec['detector']}" if spec.get("detector") else ""
    text = spec.get("text") or (f"{spec['sanitize']} (project, keyed{detector})" if spec.get("sanitize") else None)
    return {"text": text, "erasure": spec.get("erasure"), "noise": None if noise == "none" else noise,
            "query_transform": spec.get("query_transform")}


# --------------------------------------------------------------------------- embeddings
_CONCEPTS: dict[tuple[str, str, str], Any] = {}


def fitted_concept(concept: str, estimator: str, encoder: Any, cfg: dict[str, Any]) -> Any:
    """Fit (once per process) ``concept`` with ``estimator`` for ``encoder``."""
    key = (concept, estimator, encoder.model_id)
    if key not in _CONCEPTS:
        from ..fitted import fit_concept

        kwargs = dict(cfg.get("concept_fit", {}).get(estimator, {}))
        kwargs.setdefault("show_progress", False)
        _CONCEPTS[key] = fit_concept(concept, encoder, estimator=estimator, **kwargs)
    return _CONCEPTS[key]


def sealable(mechanism: str) -> bool:
    """Whether a row can write a sealed store: a row with the project's text stage (it is keyed)."""
    return bool(MECHANISM_SPECS.get(mechanism, {}).get("sanitize"))


def make_embedding(mechanism: str, eps: float, seed: int, encoder: Any, concept: str,
                   cfg: dict[str, Any], *, key_role: str = "victim", seal: bool = False) -> Any:
    """The PrivateEmbedding of one grid cell (seeded: benchmark only).

    Rows with a ``"sanitize"`` entry are keyed with :func:`bench_key` under the public salt
    :func:`bench_salt` (so their keyed noise reproduces across processes; ``key_role`` "aux" builds
    the same configuration under another key, for the key-less attacker); their noise is then
    keyed per text, as in real use with a key. Other rows ignore ``key_role`` except through
    the seed: ``"aux"`` draws their noise from another seed.

    ``store_geometry="none"``: the harness stores the mechanism's own output (its store uses the
    embedding's space), so a ``+qt`` row stores exactly its base row's vectors and the committed
    results stay comparable; benchmarks/space_invariance.py measures the geometries.

    ``seal``: the cell's store is sealed (a keyed row, :func:`sealable`); otherwise a keyed row is
    built with ``seal=False`` and its store keeps the sanitized text in clear."""
    from ..embedding import PrivateEmbedding

    spec = dict(MECHANISM_SPECS[mechanism])
    state = seed if key_role == "victim" else seed + 7919  # "aux": an independent noise stream
    if "learned" in spec:
        from ..mechanisms import load_learned

        kind = spec["learned"]
        over = {"epsilon": eps} if kind == "cape" else {"radius": eps / math.sqrt(encoder.dim)}
        # a config may point a row at other artefacts (e.g. trained on disjoint data)
        folder = cfg.get("learned_artefacts", {}).get(kind)
        mech = load_learned(Path(folder).expanduser() if folder else kind, random_state=state, **over)
        return PrivateEmbedding(eps=eps, model=encoder, mechanism=mech, query_transform="none", random_state=state,
                                store_geometry="none")
    spec.pop("text", None)  # the text stage is applied by the task (doc_transform), not here
    detector = spec.pop("detector", None)
    est = spec.pop("estimator", None)
    fitted = fitted_concept(concept, est, encoder, cfg) if est else None
    kw: dict[str, Any] = {"sanitize": None}
    if spec.get("sanitize"):
        key = bench_key(seed, key_role)
        kw = {"sanitize": spec["sanitize"], "key": key, "key_salt": bench_salt(seed, key_role)}
        if concept != "PII" or detector:  # the task's own span concept (the string path sanitizes "PII")
            from ..text import Sanitizer

            extra: dict[str, Any] = {"detector": detector, "timeout": None} if detector else {}
            kw["sanitize"] = Sanitizer(concept, policy=spec["sanitize"], key=key, **extra)
    if seal and not spec.get("sanitize"):
        raise ValueError(f"seal: the row {mechanism!r} has no key (only rows with the project's text stage seal)")
    if spec.get("sanitize"):
        kw["seal"] = bool(seal)
    return PrivateEmbedding(noise_concept=fitted, eps=eps if math.isfinite(eps) else 1.0, model=encoder,
                            mechanism=spec["mechanism"], query_transform=spec.get("query_transform", "none"),
                            random_state=state, store_geometry="none", **kw)
