"""What every sealed store path shares: the written row, the key holder's re-rank, filters, keys.

A sealed path writes per document (:func:`seal_rows`): the id :meth:`Sealer.stored_id`, the
readable text field :meth:`Sealer.marker` of the kept text, the readable metadata (only the
keys of :attr:`Sealing.readable_metadata`, after the text stage) plus
:data:`~private_vectors.sealed.records.SEALED_KEY` → the record, and the noisy vector. The key
holder reads (:func:`open_ranked`): the store's top K noisy candidates, opened and re-ranked by
the exact vectors against the clean query vector. The text stage's keyed query index is kept
per document too (:func:`document_refs` inside the record, :func:`drop_refs` on delete), so a
deleted document's entries go with it unless a remaining document holds them.

Duck-typed on the embedding (``embedding.pipeline``, ``embedding.sanitizer``): this module sits
below the pipeline and imports none of it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import Described, InvalidParameterError, SealedStoreError
from ..keys import KEY_ENV
from .records import SEALED_KEY, SealedPayload, Sealer
from .rerank import candidate_count, rerank

__all__ = ["SealedRows", "check_filter", "document_refs", "drop_refs", "exact_relevance", "exact_score",
           "fetch_count", "is_sealed_config", "open_ranked", "readable_metadata", "record_of", "require_key",
           "seal_rows", "sealer_of"]


def is_sealed_config(config: Any) -> bool:
    """Whether a stored PrivateEmbedding config records a sealed store."""
    return isinstance(config, Mapping) and isinstance(config.get("seal"), Mapping)


def require_key(config: Any, where: str, *, given: bool) -> None:
    """Refuse to open the sealed store ``where`` when no key is at hand (``given``: the caller
    passed a key or a keyed embedding; the environment's key counts too).

    Raises:
        SealedStoreError: naming ``key``.
    """
    import os

    if given or not is_sealed_config(config) or os.environ.get(KEY_ENV):
        return
    raise SealedStoreError(f"key: {where} is sealed (its text and metadata are kept in sealed records) and no key "
                           f"was given; pass key=... or set {KEY_ENV} to the key it was sealed with")


def sealer_of(embedding: Any) -> Sealer | None:
    """The store's :class:`Sealer` when ``embedding`` seals (bound: the store recorded its config), else None."""
    binding = getattr(getattr(embedding, "pipeline", None), "seal", None)
    if binding is None or not binding.sealed:
        return None
    return Sealer.for_embedding(embedding)


def readable_metadata(metadata: Mapping[str, Any] | None, sealer: Sealer) -> dict[str, Any]:
    """The part of ``metadata`` a sealed store keeps readable: the keys of ``readable_metadata``."""
    keep = sealer.sealing.readable_metadata
    return {k: v for k, v in (metadata or {}).items() if k in keep}


@dataclass(frozen=True, repr=False)
class SealedRows:
    """What a sealed path writes for a batch: ids, markers, readable metadata (with the record)."""

    stored_ids: list[str]
    markers: list[str]
    metadatas: list[dict[str, Any]]
    records: list[str]

    def __repr__(self) -> str:
        return f"SealedRows(<{len(self.stored_ids)} rows>)"


def seal_rows(sealer: Sealer, ids: Sequence[Any], *, texts: Sequence[str | None] | None,
              metadatas: Sequence[Mapping[str, Any] | None] | None, vectors: Any,
              restores: Sequence[str | None] | None = None,
              refs: Sequence[Sequence[str]] | None = None) -> SealedRows:
    """Seal a batch (see the module docstring); ``texts`` None: the store keeps no text (markers of None)."""
    n = len(ids)
    kept = list(texts) if texts is not None else [None] * n
    metas = list(metadatas) if metadatas is not None else [None] * n
    records = sealer.seal_many(list(ids), texts=kept, metadatas=metas, vectors=vectors, restores=restores,
                               index_refs=refs)
    return SealedRows(stored_ids=[sealer.stored_id(i) for i in ids], markers=[sealer.marker(t) for t in kept],
                      metadatas=[{**readable_metadata(m, sealer), SEALED_KEY: r} for m, r in zip(metas, records,
                                                                                                 strict=True)],
                      records=records)


def record_of(metadata: Mapping[str, Any] | None, where: str) -> str:
    """The record in a row's metadata.

    Raises:
        SealedStoreError: the row has none (written unsealed into a sealed store, or edited).
    """
    record = (metadata or {}).get(SEALED_KEY)
    if not isinstance(record, str):
        raise SealedStoreError(f"{where}: a row of this sealed store holds no sealed record (written without "
                               "sealing, or edited)")
    return record


def open_ranked(sealer: Sealer, stored_ids: Sequence[Any], records: Sequence[Any], clean_query: Any, k: int,
                space: str) -> list[tuple[int, SealedPayload, float]]:
    """Open the candidates and keep the ``k`` nearest by exact distance (``space``'s
    convention, :func:`~private_vectors.sealed.rerank.exact_distances`), nearest first, as
    (position among the candidates, payload, distance); ties keep the store's order. Every
    candidate is authenticated; only the ``k`` kept are parsed (:meth:`Sealer.open_records`)."""
    if not len(stored_ids):
        return []
    opened = sealer.open_records(list(stored_ids), list(records))
    order, dist = rerank(clean_query, opened.vectors, k, space)
    return [(int(j), opened.payload(int(j)), float(d)) for j, d in zip(order, dist, strict=True)]


def exact_relevance(distance: float, space: str) -> float:
    """A relevance in [0, 1] from an exact distance: the clean cosine for unit vectors
    (``l2``: 1 − d/2; ``ip``, ``cosine``: 1 − d), clipped."""
    sim = 1.0 - distance / 2.0 if space == "l2" else 1.0 - distance
    return min(1.0, max(0.0, float(sim)))


def exact_score(distance: float, space: str) -> float:
    """The store's own score from an exact distance: squared L2 for ``l2``, else q·x (1 − d)."""
    return float(distance) if space == "l2" else 1.0 - float(distance)


def fetch_count(k: int, embedding: Any, n: int, candidates: int | str = "auto") -> int:
    """K for ``k`` results from ``n`` stored vectors (:func:`~private_vectors.sealed.candidate_count`;
    a noiseless embedding counts as ε = ∞)."""
    eps = getattr(embedding, "eps", None)
    eps = float(eps) if isinstance(eps, (int, float)) and np.isfinite(eps) and eps > 0 else 1e9
    return candidate_count(k, eps, n, candidates=candidates)


def check_filter(filter: Any, sealer: Sealer, name: str = "filter") -> None:
    """Refuse a metadata filter on a sealed key (the store holds only the readable keys).

    ``filter``: a dict of key → value (or a Chroma-style ``where`` with ``$and``/``$or``);
    a callable filter is refused too (it would see only the readable part).

    Raises:
        InvalidParameterError: naming ``name``, saying which key is sealed.
    """
    if filter is None:
        return
    if callable(filter):
        raise InvalidParameterError(name, "a dict on the readable metadata keys of this sealed store "
                                    f"{list(sealer.sealing.readable_metadata)}", Described("<a callable>"),
                                    note="a sealed store keeps other metadata only inside its sealed records")
    sealed = sorted(k for k in _filter_keys(filter) if k not in sealer.sealing.readable_metadata)
    if sealed:
        raise InvalidParameterError(name, f"a filter on the readable metadata keys {list(sealer.sealing.readable_metadata)}",
                                    Described(f"<a filter on {len(sealed)} sealed key(s)>"),
                                    note="that field is sealed: list it in Sealing(readable_metadata=[...]) when the "
                                    "store is written to filter on it")


def _filter_keys(filter: Any) -> set[str]:
    if not isinstance(filter, Mapping):
        return set()
    out: set[str] = set()
    for key, value in filter.items():
        if key in ("$and", "$or") and isinstance(value, (list, tuple)):
            for part in value:
                out |= _filter_keys(part)
        elif isinstance(key, str) and not key.startswith("$"):
            out.add(key)
    return out


# -- the keyed query index, per document -----------------------------------------------------------
def _index_of(embedding: Any) -> Any:
    index = getattr(getattr(embedding, "sanitizer", None), "index", None)
    return index if index is not None and callable(getattr(index, "entries", None)) else None


def document_refs(embedding: Any, texts: Sequence[str], logs: Sequence[Any] | None,
                  also: Collection[str] = frozenset()) -> list[list[str]] | None:
    """Each document's entries in the text stage's keyed query index (HMACs), from the text
    stage's replacement log (:func:`private_vectors.restore.sanitize_recorded`); None without one.
    Call it after the batch was sanitized (its entries are then in the index); ``also``: entries
    the index will hold that it does not hold yet (a Ray job's, written when the job ends)."""
    index = _index_of(embedding)
    if logs is None or index is None:
        return None
    held = index.entries_view
    out = []
    for text, log in zip(texts, logs, strict=True):
        refs: set[str] = set()
        for start, end, label, _ in log or ():
            refs.update(m for m in index.entries(label, text[start:end]) if m in held or m in also)
        out.append(sorted(refs))
    return out


def drop_refs(embedding: Any, deleted: Iterable[Sequence[str]], remaining: Iterable[Sequence[str]]) -> int:
    """Remove from the query index the entries of the ``deleted`` documents that no ``remaining``
    document holds; returns how many went."""
    index = _index_of(embedding)
    gone = set().union(*[set(r) for r in deleted]) if index is not None else set()
    if not gone:
        return 0
    for refs in remaining:
        gone.difference_update(refs)
        if not gone:
            return 0
    return index.discard(sorted(gone))
