"""What a ``PrivateEmbedding`` protects, in numbers (:func:`privacy_report`, JSON-safe, for
machines) and in a few plain sentences (:func:`privacy_report_text`, for people)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._files import measured_figures
from ._validation import check_texts
from .config import KEY_ENV, canonical

__all__ = ["privacy_report", "privacy_report_text"]

_POLICY_NOTES = {
    "redact": ("detected spans become typed placeholders (<PERSON>) in stored vectors, stored text and "
               "queries; entity queries (by name) no longer retrieve those documents"),
    "surrogate": ("detected spans become keyed same-slot surrogates, consistent across documents and queries "
                  "for the key holder; an attacker who knows the plaintext of other documents about the same "
                  "person can learn that person's surrogate"),
    "keep": "spans are detected but left in place",
}


def _text_stage(sanitizer: Any) -> dict[str, Any]:
    if sanitizer is None:
        return {"enabled": False, "note": "no text stage: raw names and values reach the encoder"}
    cfg = sanitizer.get_config()
    policy = cfg.get("policy")
    out = {"enabled": True, "policy": policy, "keyed": cfg.get("keyed"), "sanitizer": cfg,
           "note": _POLICY_NOTES.get(str(policy), "custom sanitizer"),
           "misses": "a span the detectors miss reaches the encoder and the stored text unchanged"}
    if cfg.get("keyed"):  # the protected store paths keep an encrypted restore record per document
        from .restore import RESTORE_NOTE

        out["restore_data"] = RESTORE_NOTE
    return out


def _text_concept(embedding: Any) -> Any:
    """What the text stage replaces: the text concept as written, else the text stage's own."""
    if embedding.concept is not None:
        return embedding.concept
    sanitizer = embedding.pipeline.sanitizer
    return None if sanitizer is None else sanitizer.get_config().get("concept")


def _directions(mechanism: Any) -> dict[str, Any]:
    from .retrieval import noise_directions

    nd = noise_directions(mechanism)
    if nd is None:
        return {"shape": "spherical: every direction gets the same noise"}
    N, U, rest = nd
    out: dict[str, Any] = {"noise_variance_max": float(N.max()),
                           "noise_variance_min": float(N.min() if rest is None else min(N.min(), rest))}
    if rest is not None:
        out.update(shape=f"concept subspace of rank {U.shape[1]} gets the most noise",
                   noise_variance_in_subspace=float(N.max()), noise_variance_outside=float(rest))
    else:
        out["shape"] = "elliptical (per-direction variances of Sigma)"
    return out


def _typical_distance(encoder: Any, texts: Sequence[str] | None) -> float:
    from .encoders import CANARY_SENTENCES

    sample = list(texts) if texts is not None else list(CANARY_SENTENCES)
    X = np.asarray(encoder.encode(check_texts(sample, "texts")), dtype=np.float64)
    d = np.sqrt(np.maximum(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1), 0))
    iu = np.triu_indices(len(X), 1)
    return float(np.median(d[iu])) if iu[0].size else float("nan")


def _unit_meaning(unit: float, dim: int) -> str:
    if math.isclose(unit, 1 / math.sqrt(dim)):
        return f"epsilon per {unit:.4g} of distance (1/sqrt(n), n={dim}: per RMS coordinate of a unit-norm vector)"
    return f"epsilon per {unit:.4g} of distance"


def privacy_report(embedding: Any, texts: Sequence[str] | None = None) -> dict[str, Any]:
    """What the stored vectors of ``embedding`` are protected by, in numbers (JSON-safe).

    Args:
        embedding: a :class:`~private_vectors.PrivateEmbedding`.
        texts: documents to measure the typical inter-document distance on (default: the
            encoder canary sentences).
    """
    pipe = embedding.pipeline
    mech = pipe.mechanism
    desc = mech.describe(dim=pipe.dim) if hasattr(mech, "describe") else {}
    typical = _typical_distance(pipe.encoder, texts)
    noise = desc.get("expected_noise_norm")
    keyed = pipe.keying.keyed
    report: dict[str, Any] = {
        "mechanism": desc.get("name", getattr(mech, "name", type(mech).__name__)),
        "epsilon": pipe.eps, "metric": desc.get("metric"), "unit": pipe.unit,
        "unit_meaning": _unit_meaning(pipe.unit, pipe.dim),
        "model": pipe.encoder.model_id, "dim": pipe.dim, "concept": _text_concept(embedding),
        "noise_concept": None if pipe.noise_concept is None else pipe.concept_reference(),
        "erasure": None if pipe.erasure is None else pipe.erasure.report(
            mechanism=desc.get("name", getattr(mech, "name", None)), eps=pipe.eps),
        "expected_noise_norm": noise, "typical_inter_document_distance": typical,
        "noise_to_distance_ratio": (float(noise) / typical if isinstance(noise, (int, float)) and typical > 0
                                    else None),
        "indistinguishability_radius": desc.get("indistinguishability_radius"),
        "guarantee": desc.get("guarantee"),
        "noisiest_dimensions": desc.get("noisiest_dimensions"),
        "quietest_dimensions": desc.get("quietest_dimensions"),
        "directions": _directions(mech),
        "query_policy": pipe.query, "query_eps": pipe.query_eps if pipe.query != "clean" else None,
        "query_transform": {**pipe.query_transform.describe(), "requested": pipe.query_transform_kind,
                            "note": "post-processing: does not change the documents' guarantee"},
        "space": pipe.space,
        "store_geometry": {**pipe.geometry_config(), "ranking": _ranking_note(pipe)},
        "store_space": embedding.store_space,
        "text_stage": _text_stage(pipe.sanitizer),
        "keyed": keyed, "key_source": embedding.key_source,
        "key_derivation": pipe.keying.version if keyed else None,
        "eps_defaulted": not embedding.eps_given,
        "randomness": desc.get("randomness", "seeded: for testing only" if pipe.random.seeded
                               else "secure: OS entropy (secrets) per call"),
    }
    if not keyed and mech.name != "none":
        report["warning"] = ("no key: each call draws fresh noise, so re-ingesting the same text k times stores k "
                             "independent noisy copies whose average has about 1/sqrt(k) of the noise. Set a key "
                             f"(key=... or {KEY_ENV}) to make re-ingestion give the identical vector.")
    if mech.name == "none":
        report["warning"] = ("mechanism 'none': vectors are stored as encoded; no privacy" if pipe.erasure is None
                             else f"mechanism 'none': erasure of {pipe.erasure.attribute!r} only, no noise: no "
                             "formal guarantee; the measured held-out attacker accuracy is under 'erasure'")
    return json.loads(canonical(report).decode("utf-8"))


def _ranking_note(pipe: Any) -> str:
    if pipe.store_geometry == "normalize":
        return "documents stored at unit norm: l2, cosine and ip stores all rank as cosine"
    if pipe.store_geometry == "augment":
        return ("documents stored with one extra coordinate sqrt(M^2 - |z|^2), queries with 0: l2, cosine and ip "
                "stores all rank as inner product")
    return f"raw vectors: ranking is as measured only in a {pipe.space!r} store"


def _text_sentence(stage: dict[str, Any]) -> str:
    if not stage["enabled"]:
        return ("Text: no text stage. Names and other values in your documents reach the encoder; the vectors "
                "carry them, blurred only by the noise.")
    cfg = stage["sanitizer"]
    concept = cfg.get("concept", "PII")
    policy = stage["policy"]
    what = {"redact": "replaced by typed placeholders such as <PERSON>",
            "surrogate": "replaced by keyed stand-ins (the same stand-in for the same value, for the key holder)",
            "keep": "detected but kept"}.get(str(policy), "handled by a custom text stage")
    return (f"Text: {concept} spans are {what} before anything is embedded or stored. "
            "A span the detectors miss is stored and embedded as written.")


def _measured_sentence(r: dict[str, Any]) -> str | None:
    """Retrieval kept (NDCG@10 against the unprotected store) and the strongest vector attacker's
    share of recovered PII tokens at this ε, where Laplace on this encoder was benchmarked with
    redaction or without a text stage (the shipped figures: :func:`~private_vectors._files.measured_figures`)."""
    figures = measured_figures()["laplace"]
    if r["mechanism"] != "laplace" or r["model"] != figures["model"] or r.get("erasure"):
        return None
    redacted = bool(r["text_stage"]["enabled"])
    if redacted and r["text_stage"]["policy"] != "redact":
        return None
    row = figures["redact" if redacted else "none"].get(f"{float(r['epsilon']):g}")
    if row is None:
        return None
    return (f"Measured at this epsilon ({'redaction' if redacted else 'no text stage'} + Laplace, "
            f"{figures['data']}): {row[0]:.2f}x of retrieval kept; the strongest vector attacker recovers "
            f"{row[1]:.1f} % of PII words ({figures['prior_percent']:.1f} % by guessing).")


def _erasure_sentence(erasure: dict[str, Any] | None) -> str | None:
    """Which attackers the erasure bounds, and the strongest retrained attacker measured."""
    if not erasure:
        return None
    attackers = erasure.get("attackers") or {}
    line = (f"Erasure: {erasure['attribute']} ({erasure['method']}) is removed for linear probes on data like its "
            "fitting data; non-linear attackers are not bounded.")
    measured = attackers.get("measured_with_noise") or attackers.get("measured")
    if measured:
        noise = f" with {measured['noise']}" if measured.get("noise") else ""
        line += (f" Measured on generated clinical notes{noise}: the strongest of 4 retrained attackers read "
                 f"{measured['attribute']} at {measured['strongest_accuracy']:.2f} where the diagnosis alone gives "
                 f"{measured['task_label_floor']:.2f}, keeping {measured['retrieval_ndcg10_vs_leace']:.2f}x LEACE's "
                 f"retrieval (benchmark {measured['results']}).")
    return line


def privacy_report_text(embedding: Any, texts: Sequence[str] | None = None) -> str:
    """A short plain-language summary of :func:`privacy_report` for a person to read (at most 8 lines).

    What the text stage replaces, what the noise means (against the typical distance between
    documents, and the measured retrieval kept and leakage when this ε and mechanism were
    benchmarked), which attackers an attribute erasure bounds (and what its method was measured
    to leave), whether there is a key, how queries are treated and what the store keeps.
    """
    r = privacy_report(embedding, texts)
    ratio = r.get("noise_to_distance_ratio")
    scale = "" if ratio is None else (f": about {ratio:.1f}x the typical distance between two documents (more noise: "
                                      "more protection, less precise retrieval)")
    lines = [
        _text_sentence(r["text_stage"]),
        f"Vectors: {r['mechanism']} noise at epsilon {r['epsilon']:g}{scale}.",
        _measured_sentence(r),
        _erasure_sentence(r.get("erasure")),
        ("Key: yes. Storing a text again gives the same vector, so copies cannot be averaged; the key is never "
         "stored." if r["keyed"] else
         f"Key: none. Each call draws fresh noise; set a key (key=... or {KEY_ENV}) so copies cannot be averaged."),
        "Queries: " + ("sent clean (they are not stored)." if r["query_policy"] == "clean"
                       else f"noised ({r['query_policy']})."),
        ("Stored text: the protected store paths keep only the sanitized text, never the raw text."
         if r["text_stage"]["enabled"] else
         "Stored text: the protected store paths keep no text unless you ask for the raw text."),
    ]
    if "warning" in r and r["mechanism"] == "none":
        lines.append("Warning: " + r["warning"] + ".")
    return "\n".join(line for line in lines if line)
