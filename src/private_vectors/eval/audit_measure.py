"""The measures of one store over the audited documents: its attacks, its residual identifiers and
its retrieval, with the same documents, tokens, names, attackers and seed for a store and for its
copy written through the library."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .audit_attack import attack_block, attack_summary, audit_attackers
from .audit_detect import AuditDetector
from .audit_options import AuditOptions
from .audit_residual import residual_pii
from .audit_retrieval import retrieval_kept, retrieval_plain
from .audit_sealed import key_holder_retrieval, open_records

__all__ = ["StoreMeasure"]


@dataclass(frozen=True)
class AuditedDocuments:
    """The audited documents (ids, raw texts), their sensitive tokens and people's names, and the
    judged queries (loaded, or None for the self-retrieval proxy)."""

    ids: list[str]
    texts: list[str]
    tokens: list[list[str]]
    names: list[Any]
    queries: Mapping[str, str] | None = None
    qrels: Mapping[str, Mapping[str, int]] | None = None


class StoreMeasure:
    """Measures one store (or its copy through the library) over the same :class:`AuditedDocuments`."""

    def __init__(self, docs: AuditedDocuments, opts: AuditOptions) -> None:
        self.docs, self.opts = docs, opts
        self.detector = AuditDetector(tuple(opts.concept) if isinstance(opts.concept, list) else opts.concept)
        """One detector for the store and its copy: each raw document is read once."""

    def __call__(self, snap: Any, encoder: Any, *, clean_baseline: bool) -> dict[str, Any]:
        """``residual_pii``, ``attack``, ``attack_raw``, ``retrieval`` and ``seconds`` of ``snap``."""
        from .cache import CachingEncoder

        timings: dict[str, float] = {}
        t0 = time.time()
        row = {d: j for j, d in enumerate(snap.ids)}
        rows = [row[d] for d in self.docs.ids]
        enc = CachingEncoder(encoder, cache_dir=self.opts.cache_dir) if encoder is not None else None
        if snap.embedding is not None:  # each distinct text encoded once (queries too)
            snap.embedding.pipeline.stages = replace(snap.embedding.pipeline.stages, encoder=enc)
        made = audit_attackers({a: p for a, p in self.opts.attackers.items() if enc is not None or a != "mlc-enc"}, enc)
        stored_block = self._attack_stored(snap, rows, made)
        timings["attack stored"] = round(time.time() - t0, 1)
        t0 = time.time()
        sub = _sample(len(self.docs.ids), self.opts.settings["clean_docs"], self.opts.seed + 3)
        C = self._clean_vectors(snap, enc, sub)
        clean_block = self._attack(C, sub, made, {}) if clean_baseline and C is not None else None
        timings["attack clean"] = round(time.time() - t0, 1)
        t0 = time.time()
        payloads = self._payloads(snap, rows)
        residual = self._residual([_kept_text(snap, r) for r in rows])
        out: dict[str, Any] = {}
        if payloads is not None:  # a sealed store, opened with the key: what its records hold
            out["sealed_content"] = self._residual([_payload_text(p) for p in payloads])
        timings["residual PII"] = round(time.time() - t0, 1)
        t0 = time.time()
        retrieval = self._retrieval(snap, enc, rows, sub, C, payloads)
        timings["retrieval"] = round(time.time() - t0, 1)
        return {"residual_pii": residual, **out, "attack": attack_summary(stored_block, clean_block, list(made)),
                "attack_raw": {"stored": _jsonable(stored_block), "clean": _jsonable(clean_block)},
                "retrieval": retrieval, "seconds": timings}

    def _payloads(self, snap: Any, rows: list[int]) -> list[Any] | None:
        """The audited documents' opened records (a sealed store read with its key), else None."""
        records = snap.extra.get("records")
        if records is None or snap.embedding is None:
            return None
        held = snap.extra.get("record_ids") or snap.ids  # the ids the records are bound to (FAISS: string ids)
        return open_records(snap.embedding, [held[r] for r in rows], [records[r] for r in rows])

    def _attack(self, V: np.ndarray, idx: list[int], made: dict[str, Any], transforms: dict[str, Any]) -> dict[str, Any]:
        d = self.docs
        return attack_block(V, [d.tokens[i] for i in idx], [d.names[i] for i in idx], [d.texts[i] for i in idx],
                            made, self.opts.seed, transforms)

    def _attack_stored(self, snap: Any, rows: list[int], made: dict[str, Any]) -> dict[str, Any]:
        """The attack on the stored vectors (the mechanism's own output: the store's geometry undone)."""
        from ..retrieval import strip_geometry
        from .runner import adaptive_transforms

        ef, held = snap.embedding, snap.vectors[rows]
        V = np.asarray(strip_geometry(held, ef.store_geometry) if ef is not None else held, dtype=np.float32)
        return self._attack(V, list(range(len(rows))), made, adaptive_transforms(ef, {}) if ef is not None else {})

    def _clean_vectors(self, snap: Any, enc: Any, sub: list[int]) -> np.ndarray | None:
        """Clean vectors of the sampled raw texts (a protected store with an encoder), else None."""
        if enc is None or snap.embedding is None:
            return None
        texts = [self.docs.texts[i] for i in sub]
        enc.warm(texts)
        return np.asarray(enc.encode(texts))

    def _residual(self, kept: list[str | None]) -> dict[str, Any]:
        """Residual identifiers of what is kept of each audited document, on the detectors' sample."""
        idx = _sample(len(self.docs.ids), self.opts.settings["presidio_docs"], self.opts.seed + 7)
        return residual_pii([kept[i] for i in idx], [self.docs.texts[i] for i in idx],
                            show_values=self.opts.show_values, detector=self.detector)

    def _retrieval(self, snap: Any, enc: Any, rows: list[int], sub: list[int], C: np.ndarray | None,
                   payloads: list[Any] | None) -> dict[str, Any]:
        if enc is None:
            return {"mode": None, "not_run": "no encoder to embed the queries with"}
        held = snap.vectors[[rows[i] for i in sub]]
        ids, texts = [self.docs.ids[i] for i in sub], [self.docs.texts[i] for i in sub]
        kw = {"queries": self.docs.queries, "qrels": self.docs.qrels, "n_self": self.opts.settings["self_queries"],
              "seed": self.opts.seed}
        if snap.embedding is None:  # a plain store: its vectors are the clean ones
            return retrieval_plain(enc, held, ids, texts, snap.space, **kw)
        assert C is not None  # (a protected store with an encoder encodes the clean sample)
        if payloads is not None and all(payloads[i] is not None for i in sub):
            exact = np.stack([payloads[i].vector for i in sub])
            return key_holder_retrieval(snap.embedding, held, exact, C, ids, texts, snap.space, **kw)
        return retrieval_kept(snap.embedding, held, C, ids, texts, snap.space, **kw)


def _payload_text(payload: Any) -> str | None:
    """What a sealed record holds as text: its sanitized text and its string metadata values."""
    from .audit_store import metadata_text

    if payload is None:
        return None
    parts = [p for p in (payload.text, metadata_text(payload.metadata)) if p]
    return "\n".join(parts) or None


def _kept_text(snap: Any, row: int) -> str | None:
    """What the store keeps of a document in text: its text and its string metadata values."""
    parts = [p for p in (snap.texts[row], snap.metadata_texts[row] if snap.metadata_texts else "") if p]
    return "\n".join(parts) or None


def _sample(n: int, size: int, seed: int) -> list[int]:
    """Sorted indices of a seeded sample of ``size`` of ``range(n)`` (all of them when n <= size)."""
    if n <= size:
        return list(range(n))
    return sorted(np.random.default_rng(seed).choice(n, size=size, replace=False).tolist())


def _jsonable(block: Any) -> Any:
    if block is None:
        return None
    return json.loads(json.dumps(block, default=float))
