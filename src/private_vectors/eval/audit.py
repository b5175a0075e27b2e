"""``private-vectors audit``: what a store leaks, and what it still keeps.

Given a persisted store (:mod:`private_vectors.eval.audit_store`) and the owner's raw
documents for (some of) its ids (:mod:`private_vectors.eval.audit_inputs`), :func:`audit`
measures, with the benchmark harness's own code:

* **residual identifiers in the stored text** (:mod:`~private_vectors.eval.audit_residual`);
* **what an attacker recovers from the stored vectors** (:mod:`~private_vectors.eval.audit_attack`):
  sensitive-token and name recovery by the harness's attackers, against the prior attacker,
  plus the same attack on clean vectors of the same raw texts (the store's encoder, no text
  stage, no noise) for scale;
* **what retrieval keeps** (:mod:`~private_vectors.eval.audit_retrieval`): with queries and
  judgements, NDCG@10 through the store's query path over its stored vectors against a clean
  index of the same raw documents; without them, a self-retrieval proxy (each sampled
  document's raw text as the query for itself) and the top-10 overlap of the two rankings.

This module orchestrates: it reads the store, matches the raw documents, runs the measures of
:mod:`~private_vectors.eval.audit_measure` on the store (and on its copy written through the
library, for a store written without it) and hands the report to
:mod:`~private_vectors.eval.audit_report`. Counts, never values, unless ``show_values=True``.
Nothing is written into the store (it is read from a private copy); the optional encoder cache
holds clean vectors under hashed names, no text, and must live outside the store.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Described, InvalidParameterError
from .audit_attack import TRAIN_SHARE, tokens_and_names
from .audit_inputs import RawSource, load_qrels, load_queries, load_raw
from .audit_measure import AuditedDocuments, StoreMeasure
from .audit_options import DEFAULT_ATTACKERS, QUICK, AuditOptions, audit_options
from .audit_report import comparison, headline, summary_text, write_report
from .audit_store import read_store

__all__ = ["DEFAULT_ATTACKERS", "QUICK", "audit", "summary_text", "write_report"]

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
    "every detector misses (the counts of personal data are the library's recognizers and learned tagger, "
    "presidio's, and unknown-word names, on the text and on a case-restored view).",
    "Attackers holding more of your documents than the audit's training share, or holding the key.",
]


def audit(store: str | Path, raw: RawSource | None = None, *, key: Any = None, kind: str = "auto",
          collection: str | None = None, model: str | None = None, concept: Any = "PII", eps: float = 10.0,
          compare: bool = True, queries: Any = None, qrels: Any = None, quick: bool = False, seed: int = 0,
          attackers: Mapping[str, Any] | None = None, clean_baseline: bool = True, show_values: bool = False,
          cache_dir: str | Path | None = None, max_docs: int | None = None, id_field: str = "id",
          text_field: str = "text", progress: bool = True, out: str | Path | None = None) -> dict[str, Any]:
    """Audit a persisted store (see the module docstring; options resolved by :func:`~private_vectors.eval.audit_options.audit_options`).

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
        quick: the faster settings of :data:`~private_vectors.eval.audit_options.QUICK`.
        seed: the attackers' split and initialisation (the harness's seed).
        attackers: harness attacker names → parameters (default :data:`~private_vectors.eval.audit_options.DEFAULT_ATTACKERS`; the
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
    opts = audit_options(store, kind=kind, collection=collection, model=model, concept=concept, eps=eps,
                         compare=compare, queries=queries, qrels=qrels, quick=quick, seed=seed, attackers=attackers,
                         clean_baseline=clean_baseline, show_values=show_values, cache_dir=cache_dir,
                         max_docs=max_docs, id_field=id_field, text_field=text_field, progress=progress, out=out)
    t_all = time.time()
    try:  # the key never stays in a local a traceback could show
        snap = read_store(store, kind=opts.kind, collection=opts.collection, key=key)
    finally:
        del key
    return run_audit(snap, raw, opts, started=t_all)


def run_audit(snap: Any, raw: RawSource | None, opts: AuditOptions, *, started: float | None = None
              ) -> dict[str, Any]:
    """The audit of a store already read (:func:`~private_vectors.eval.audit_store.read_store`)."""
    from tqdm.auto import tqdm

    started = time.time() if started is None else started
    bar = tqdm(total=4 if opts.compare and not snap.protected else 2, desc="audit", disable=not opts.progress)
    raw_docs, raw_source = _raw_documents(raw, snap, opts.id_field, opts.text_field)
    covered, coverage = _coverage(snap, raw_docs, opts.settings["max_docs"], opts.seed)
    docs = _audited(covered, [raw_docs[d] for d in covered], opts)
    bar.update(1)
    encoder, encoder_info = _store_encoder(snap, opts.model)
    measure = StoreMeasure(docs, opts)
    before = measure(snap, encoder, clean_baseline=opts.clean_baseline and snap.protected)
    bar.update(1)
    after = None
    if opts.compare and not snap.protected:
        after_snap = _reingest(snap, docs.ids, docs.texts, encoder_info, opts.concept, opts.eps)
        bar.update(1)
        after = measure(after_snap, after_snap.embedding.encoder, clean_baseline=False)
        after["protection"] = _protection(after_snap.config)
        bar.update(1)
    bar.close()
    report = _report(snap, opts, coverage, raw_source, encoder_info, before, started)
    report["ids"] = _ids(snap, opts, measure.detector)
    if after is not None:
        report["after"] = after
        report["comparison"] = comparison(report)
    report["headline"] = headline(report)
    if opts.out is not None:
        write_report(report, opts.out)
    return report


def _ids(snap: Any, opts: AuditOptions, detector: Any) -> dict[str, Any]:
    """How many stored ids look personal (:func:`~private_vectors.eval.audit_detect.personal_ids`; a
    seeded sample of the detectors' sample size when there are more)."""
    from .audit_detect import personal_ids

    n = opts.settings["presidio_docs"]
    ids = [str(i) for i in snap.ids]
    if len(ids) > n:
        ids = [ids[j] for j in sorted(np.random.default_rng(opts.seed + 11).choice(len(ids), size=n, replace=False))]
    return personal_ids(ids, detector)


def _audited(ids: list[str], texts: list[str], opts: AuditOptions) -> AuditedDocuments:
    """The audited documents with their sensitive tokens and names (one spaCy pass) and the judged queries."""
    tokens, names = tokens_and_names(texts)
    return AuditedDocuments(ids, texts, tokens, names,
                            load_queries(opts.queries) if opts.queries is not None else None,
                            load_qrels(opts.qrels) if opts.qrels is not None else None)


def _report(snap: Any, opts: AuditOptions, coverage: dict[str, int], raw_source: str, encoder_info: dict[str, Any],
            before: dict[str, Any], started: float) -> dict[str, Any]:
    """The report's fields for the audited store (the comparison and the headline are added after)."""
    return {
        "store": {"kind": snap.kind, "where": snap.where, "space": snap.space, "protected": snap.protected,
                  "protection": _protection(snap.config) if snap.protected else None, "encoder": encoder_info,
                  "raw": raw_source, "concept": _concept_name(opts.concept)},
        "coverage": coverage,
        "settings": {"quick": opts.quick, "seed": opts.seed, "attackers": dict(opts.attackers),
                     "train_share": TRAIN_SHARE, "clean_baseline": opts.clean_baseline, **opts.settings},
        **{k: v for k, v in before.items() if k != "seconds"},
        "index_files": snap.extra.get("index_files"),
        "sealed": snap.extra.get("sealed"),
        "threat_model": THREAT_MODEL,
        "not_tested": NOT_TESTED,
        "seconds": {**before["seconds"], "total": round(time.time() - started, 1)},
    }


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
                                    Described(f"{len(covered)} matching ids (of {len(raw_docs)} raw, {len(snap.ids)} stored)"))
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


def _protection(config: Mapping[str, Any]) -> dict[str, Any]:
    """The store's protection in a few fields (no key material: the config holds none)."""
    san = config.get("sanitizer")
    return {"text_stage": None if not san else san.get("policy", "custom"), "mechanism": config.get("mechanism"),
            "eps": config.get("eps"), "keyed": bool(config.get("keyed")), "concept": config.get("concept")}
