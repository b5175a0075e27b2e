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
vectors — the headline — use every audited document in both (``benchmarks/results/audit_timing.md``
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
    "generative inversion (vec2text-style iterative correction or large decoders) stronger than the "
    "harness's attackers; the harness's GEIA-style decoder is not run by default (attackers={'generative': {}})",
    "linking across stores or with outside data (a pseudonym's frequency, co-occurring attributes)",
    "identifiers spaCy's NER does not tag (the sensitive tokens are spaCy's entities) and values "
    "presidio's default recognizers miss (the residual-PII counts are presidio's)",
    "attackers with more labelled documents than the audit's training share, or with the key",
]


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
def _analyzer() -> Any:
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
    """Residual-PII figures (see the module docstring) over ``stored`` texts (None = no text)."""
    kept = [i for i, t in enumerate(stored) if t]
    out: dict[str, Any] = {"documents": len(stored), "documents_with_text": len(kept)}
    if not kept:
        out.update({"findings": 0, "findings_by_type": {}, "documents_with_findings": 0})
        if raw is not None:
            out.update({"raw_values": None, "raw_values_left": 0, "raw_values_left_by_type": {}})
        return out
    engine = _analyzer()
    found = presidio_findings([stored[i] for i in kept], engine)
    by_type = Counter(e for f in found for e, _ in f)
    out.update({"findings": sum(by_type.values()), "findings_by_type": dict(sorted(by_type.items())),
                "documents_with_findings": sum(1 for f in found if f)})
    if show_values:
        out["finding_values"] = sorted({v for f in found for _, v in f})[:50]
    if raw is not None:
        raw_found = presidio_findings([raw[i] for i in kept], engine)
        left: Counter[str] = Counter()
        total = 0
        values_left = []
        for i, f in zip(kept, raw_found, strict=True):
            for etype, value in dict.fromkeys(f):
                if len(value.strip()) < 2:
                    continue
                total += 1
                if value in (stored[i] or ""):
                    left[etype] += 1
                    values_left.append(value)
        out.update({"raw_values": total, "raw_values_left": sum(left.values()),
                    "raw_values_left_by_type": dict(sorted(left.items()))})
        if show_values:
            out["raw_values_left_values"] = sorted(set(values_left))[:50]
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

    present = set(ids)
    if queries is not None and qrels is not None:
        judged = {q: {d: g for d, g in rel.items() if d in present} for q, rel in qrels.items() if q in queries}
        judged = {q: r for q, r in judged.items() if any(g > 0 for g in r.values())}
        if not judged:
            raise InvalidParameterError("qrels", "judgements naming at least one audited document", len(qrels))
        qids = sorted(judged)
        texts = [queries[q] for q in qids]
        mode = "queries"
    else:
        rng = np.random.default_rng(seed)
        pick = sorted(rng.choice(len(ids), size=min(n_self, len(ids)), replace=False).tolist())
        qids = [f"self:{ids[i]}" for i in pick]
        texts = [raw[i] for i in pick]
        judged = {q: {ids[i]: 1} for q, i in zip(qids, pick, strict=True)}
        mode = "self-retrieval"
    Q = ef.embed_query_array(texts)
    Qc = ef.encoder.encode(texts)  # the clean encoder (a CachingEncoder in an audit)
    private = _run(_scores(Q, stored, space), ids, qids, k)
    plain = _run(_scores(Qc, clean, "cosine"), ids, qids, k)
    overlap = float(np.mean([len(set(private[q]) & set(plain[q])) / k for q in qids]))
    p, c = ndcg_at_k(private, judged, k), ndcg_at_k(plain, judged, k)
    return {"mode": mode, "queries": len(qids), "ndcg@10": p, "ndcg@10_clean": c,
            "ndcg@10_kept": p / c if c > 0 else float("nan"), f"top{k}_overlap": overlap}


# --------------------------------------------------------------------------- the audit
def audit(store: str | Path, raw: RawSource, *, key: Any = None, kind: str = "auto", collection: str | None = None,
          queries: Any = None, qrels: Any = None, quick: bool = False, seed: int = 0,
          attackers: Mapping[str, Any] | None = None, clean_baseline: bool = True, show_values: bool = False,
          cache_dir: str | Path | None = None, max_docs: int | None = None, id_field: str = "id",
          text_field: str = "text", progress: bool = True, out: str | Path | None = None) -> dict[str, Any]:
    """Audit a persisted store against the owner's raw documents (see the module docstring).

    Args:
        store: the store's folder (Chroma persistent folder, LangChain drop-in folder or
            PrivateFaissIndex folder).
        raw: the raw documents for the store's ids: a JSONL/CSV/Parquet path, a mapping
            ``{id: text}`` or a callable ``ids -> texts`` (a sample of the store is enough).
        key: the store's key when it was written with one (default: ``PRIVATE_VECTORS_KEY``).
        kind: ``"auto"``, ``"chroma"``, ``"langchain"`` or ``"faiss"``.
        collection: the Chroma collection (default: the only one, or ``"langchain"``).
        queries: optional queries (JSONL path or ``{id: text}``) for NDCG@10; else the
            self-retrieval proxy.
        qrels: their judgements (BEIR TSV or ``{query: {doc: grade}}``).
        quick: the faster settings of :data:`QUICK`.
        seed: the attackers' split and initialisation (the harness's seed).
        attackers: harness attacker names → parameters (default :data:`DEFAULT_ATTACKERS`; the
            prior attacker is always added: it is the baseline).
        clean_baseline: also attack clean vectors of the same raw texts (for scale).
        show_values: put values (found identifiers, raw values left) into the report; default
            counts only.
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
        ConfigMismatchError: the store recorded no PrivateEmbedding configuration, or a wrong
            or missing key.
        InvalidParameterError: no raw document for any stored id, or bad options.
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
    steps = ["read store", "tokens", "attack stored", "attack clean", "residual PII", "retrieval"]
    bar = tqdm(total=len(steps), desc="audit", disable=not progress)
    timings: dict[str, float] = {}
    t_all = time.time()

    def step(name: str) -> None:
        bar.set_postfix_str(name)

    def done(name: str, t0: float) -> None:
        timings[name] = round(time.time() - t0, 1)
        bar.update(1)

    t0 = time.time()
    step("read store")
    try:  # the key never stays in a local a traceback could show
        snap = read_store(store, kind=kind, collection=collection, key=key)
    finally:
        del key
    ef = snap.embedding
    raw_docs = load_raw(raw, snap.ids, id_field=id_field, text_field=text_field)
    stored_ids = set(snap.ids)
    covered = [i for i in raw_docs if i in stored_ids]
    coverage = {"stored": len(snap.ids), "raw": len(raw_docs), "audited": len(covered),
                "raw_not_in_store": len(raw_docs) - len(covered),
                "store_not_in_raw": len(stored_ids) - len(covered)}
    if len(covered) < 10:
        raise InvalidParameterError("raw", "raw documents for at least 10 of the store's ids",
                                    f"{len(covered)} matching ids (of {len(raw_docs)} raw, {len(snap.ids)} stored)")
    if len(covered) > settings["max_docs"]:
        rng = np.random.default_rng(seed)
        keep = set(rng.choice(len(covered), size=settings["max_docs"], replace=False).tolist())
        covered = [d for j, d in enumerate(covered) if j in keep]
    coverage["sampled"] = len(covered)
    row = {d: j for j, d in enumerate(snap.ids)}
    rows = [row[d] for d in covered]
    texts = [raw_docs[d] for d in covered]
    from ..retrieval import strip_geometry

    held = snap.vectors[rows]
    V = np.asarray(strip_geometry(held, ef.store_geometry), dtype=np.float32)
    kept_texts = [snap.texts[r] for r in rows]
    done("read store", t0)

    t0 = time.time()
    step("tokens")
    tokens, names = tokens_and_names(texts)
    done("tokens", t0)

    from .cache import CachingEncoder
    from .runner import adaptive_transforms

    enc = CachingEncoder(ef.encoder, cache_dir=cache_dir)  # batches of 256: no encoder progress bar
    ef.pipeline.stages = replace(ef.pipeline.stages, encoder=enc)  # each distinct text encoded once (queries too)
    made = _attackers(spec, enc)
    t0 = time.time()
    step("attack stored")
    stored_block = _attack_block(V, tokens, names, texts, made, seed, adaptive_transforms(ef, {}))
    done("attack stored", t0)

    t0 = time.time()
    step("attack clean")
    sub = _sample(len(covered), settings["clean_docs"], seed + 3)
    s_texts = [texts[i] for i in sub]
    enc.warm(s_texts)
    C = enc.encode(s_texts)
    clean_block = _attack_block(C, [tokens[i] for i in sub], [names[i] for i in sub], s_texts, made, seed, {}) \
        if clean_baseline else None
    done("attack clean", t0)

    t0 = time.time()
    step("residual PII")
    pii_idx = _sample(len(covered), settings["presidio_docs"], seed + 7)
    residual = residual_pii([kept_texts[i] for i in pii_idx], [texts[i] for i in pii_idx], show_values=show_values)
    done("residual PII", t0)

    t0 = time.time()
    step("retrieval")
    q = load_queries(queries) if queries is not None else None
    j = load_qrels(qrels) if qrels is not None else None
    retrieval = retrieval_kept(ef, held[sub], C, [covered[i] for i in sub], s_texts, snap.space, queries=q, qrels=j,
                               n_self=settings["self_queries"], seed=seed)
    done("retrieval", t0)
    bar.close()

    names_all = [a for a in made]
    report = {
        "store": {"kind": snap.kind, "where": snap.where, "space": snap.space,
                  "protection": _protection(snap.config)},
        "coverage": coverage,
        "settings": {"quick": quick, "seed": seed, "attackers": spec, "train_share": TRAIN_SHARE,
                     "clean_baseline": clean_baseline, **settings},
        "residual_pii": residual,
        "attack": _attack_summary(stored_block, clean_block, names_all),
        "attack_raw": {"stored": _jsonable(stored_block), "clean": _jsonable(clean_block)},
        "retrieval": retrieval,
        "index_files": snap.extra.get("index_files"),
        "threat_model": THREAT_MODEL,
        "not_tested": NOT_TESTED,
        "seconds": {**timings, "total": round(time.time() - t_all, 1)},
    }
    report["headline"] = headline(report)
    if out is not None:
        write_report(report, out)
    return report


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


def headline(report: Mapping[str, Any]) -> str:
    """One plain sentence on names, then one on identifiers left in the stored text."""
    a = report["attack"]
    if a["names_scored"] in (0, None) or math.isnan(a["name_recovery"]):
        first = "No person names were found in the audited raw documents, so name recovery was not measured."
    elif a["names_recoverable"]:
        first = (f"Names are recoverable from the stored vectors: the {a['strongest']} attacker recovers "
                 f"{_pct(a['name_recovery'])} of first and last names against {_pct(a['name_recovery_prior'])} "
                 "by guessing the most frequent ones.")
    else:
        first = (f"Names are not recoverable beyond guessing: the strongest attacker ({a['strongest']}) recovers "
                 f"{_pct(a['name_recovery'])} of first and last names, the prior {_pct(a['name_recovery_prior'])}.")
    r = report["residual_pii"]
    if not r["documents_with_text"]:
        second = "The store keeps no document text."
    elif r.get("raw_values") is not None:
        second = (f"The stored text keeps {r['raw_values_left']} of {r['raw_values']} identifier values presidio "
                  f"finds in the raw documents ({r['documents']} checked).")
    else:
        second = f"presidio finds {r['findings']} identifier-like values in {r['documents']} stored texts."
    return f"{first} {second}"


def summary_text(report: Mapping[str, Any]) -> str:
    """The short plain-language summary (Markdown)."""
    a, r, q, c = report["attack"], report["residual_pii"], report["retrieval"], report["coverage"]
    p = report["store"]["protection"]
    lines = [f"# Audit of {report['store']['where']}", "", f"**{report['headline']}**", "",
             f"Protection recorded: text stage {p['text_stage']}, mechanism {p['mechanism']}, eps {p['eps']}, "
             f"{'keyed' if p['keyed'] else 'not keyed'}.",
             f"Coverage: {c['audited']} of {c['stored']} stored documents have a raw document "
             f"({c['store_not_in_raw']} stored ids without one, {c['raw_not_in_store']} raw ids not in the store); "
             f"{c['sampled']} audited.", "",
             "## What an attacker recovers from the stored vectors", "",
             "| attacker | sensitive tokens | first names | last names | full names | tokens, clean vectors | "
             "names, clean vectors |", "|---|---|---|---|---|---|---|"]
    for name, row in a["attackers"].items():
        cl = row.get("clean") or {}
        lines.append(f"| {name} | {_pct(row['token_recovery'])} | {_pct(row['names_first'])} | "
                     f"{_pct(row['names_last'])} | {_pct(row['names_full'])} | {_pct(cl.get('token_recovery'))} | "
                     f"{_pct(cl.get('name_recovery'))} |")
    lines += ["", f"Strongest attacker: {a['strongest']} ({a['names_scored']:.0f} people scored in held-out "
              f"documents). Names count as recoverable when its name recovery exceeds the prior's by more than "
              f"{100 * NAME_MARGIN:.0f} points.", "", "## Residual PII in the stored text", ""]
    if not r["documents_with_text"]:
        lines.append("The store keeps no document text.")
    else:
        types = ", ".join(f"{k} {v}" for k, v in r["findings_by_type"].items()) or "none"
        lines.append(f"presidio (default recognizers) finds {r['findings']} values in {r['documents_with_findings']} "
                     f"of {r['documents']} stored texts: {types}. Surrogates look like identifiers by design and "
                     "are counted here.")
        if r.get("raw_values") is not None:
            left = ", ".join(f"{k} {v}" for k, v in r["raw_values_left_by_type"].items()) or "none"
            lines.append(f"Raw values left: {r['raw_values_left']} of the {r['raw_values']} values presidio finds "
                         f"in the raw documents appear verbatim in the stored text ({left}).")
    lines += ["", "## What retrieval keeps", "",
              f"{q['mode']} over {q['queries']} queries: NDCG@10 {q['ndcg@10']:.3f} through the store vs "
              f"{q['ndcg@10_clean']:.3f} on a clean index of the same documents ({_pct(q['ndcg@10_kept'])} kept); "
              f"top-10 overlap with the clean ranking {_pct(q['top10_overlap'])}.", ""] + _index_files_text(report) + [
              "## Not tested", ""] + [f"- {x}" for x in report["not_tested"]] + ["", report["threat_model"], ""]
    return "\n".join(lines)


def _index_files_text(report: Mapping[str, Any]) -> list[str]:
    """The summary's lines on heap bytes in a Chroma folder's HNSW files (none for other stores)."""
    f = report.get("index_files")
    if not f:
        return []
    head = ["## Chroma's index files", ""]
    if not f["heap_bytes"]:
        return head + [f"None of the {f['segments']} HNSW segments holds a byte outside what its index wrote.", ""]
    where = ", ".join(f"{k} {v}" for k, v in f["collections"].items() if v)
    return head + [f"{f['segments_with_heap_bytes']} of {f['segments']} HNSW segments hold {f['heap_bytes']} non-zero "
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
