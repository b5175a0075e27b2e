"""The key holder's query of a sealed Chroma collection through its exact-vector cache.

:func:`~private_vectors.integrations.chroma_sealed.query_sealed` reads a sealed collection in one
of two ways, per call:

* **cold** (the cache holds few of the recent candidates): one Chroma query for the K candidates
  with their records; every record is opened, the candidates are re-ranked by their exact
  vectors, and those vectors are kept (:func:`ranked_cold`);
* **warm** (:func:`ranked_warm`): one Chroma query for the K candidates' ids only
  (``include=[]``: no record is read from the store), one ``get`` of the records of the
  candidates not cached, a re-rank by the cached and fetched exact vectors, and one ``get`` of
  the records of the ``n_results`` kept. Each record returned is opened and its exact vector
  compared with the one that ranked it: a record rewritten by another writer (another process,
  another function object) since its vector was cached replaces that vector and the candidates
  are ranked again, so every document returned is ranked by its current vector and comes with
  its current text. A candidate the cache holds an old vector of and that this query does not
  return is ranked by the old vector (``Sealing.vector_cache_max_age`` bounds how long).

Both give the same ids, order and distances as reading every record (the vectors are cached in
the records' own dtype). Which one runs (:func:`is_warm`): warm when the cache found at least
:data:`WARM_SHARE` of the recent queries' candidates
(:attr:`~private_vectors.sealed.vector_cache.ExactVectorCache.hit_rate`) or holds that share of
the collection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import SealedRecordError
from ..sealed import SealedPayload, Sealer
from ..sealed.rerank import rerank
from ..sealed.stores import record_of
from ..sealed.vector_cache import ExactVectorCache

__all__ = ["WARM_SHARE", "cache_of", "is_warm", "ranked_cold", "ranked_warm"]

WARM_SHARE = 0.25
"""The recent hit rate from which a query asks Chroma for ids only (below it, for every record)."""
_WHERE = "this collection"

Ranked = list[tuple[SealedPayload, float]]


def cache_of(sealer: Sealer, collection: Any) -> ExactVectorCache | None:
    """The sealer's cache for ``collection`` (None: the cache is off, ``Sealing(vector_cache=0)``)."""
    return sealer.caches.of(str(getattr(collection, "id", None) or id(collection)))


def is_warm(cache: ExactVectorCache | None, size: int) -> bool:
    """Whether a query of a collection of ``size`` documents goes through ``cache`` (warm) or
    reads every candidate's record (cold): see the module docstring."""
    return cache is not None and (cache.hit_rate >= WARM_SHARE or len(cache) >= WARM_SHARE * max(size, 1))


def ranked_cold(sealer: Sealer, cache: ExactVectorCache | None, stored_ids: Sequence[str], metadatas: Sequence[Any],
                clean: np.ndarray, k: int, space: str) -> Ranked:
    """Open every candidate's record (from a query that included them), re-rank, keep the ``k``
    nearest as (payload, distance); the exact vectors go into ``cache``."""
    if not len(stored_ids):
        return []
    opened = sealer.open_records(list(stored_ids), [record_of(m, _WHERE) for m in metadatas])
    raw = opened.raw_vectors()
    if cache is not None:
        cache.held(stored_ids)
        cache.put(list(stored_ids), raw)
    order, dist = rerank(clean, raw, k, space)
    return [(opened.payload(int(j)), float(d)) for j, d in zip(order, dist, strict=True)]


class _Opened:
    """The records this call fetched and opened: stored id → (records, position), and their vectors."""

    def __init__(self) -> None:
        self.at: dict[str, tuple[Any, int]] = {}
        self.vector: dict[str, np.ndarray] = {}

    def fetch(self, collection: Any, sealer: Sealer, cache: ExactVectorCache, ids: Sequence[str]) -> None:
        """One ``get`` of ``ids`` (those not opened yet) with their records; each is opened and
        its vector cached. An id the collection no longer holds is left out."""
        want = list(dict.fromkeys(i for i in ids if i not in self.at))
        if not want:
            return
        got = collection.get(ids=want, include=["metadatas"])
        sids = list(got["ids"])
        if not sids:
            return
        opened = sealer.open_records(sids, [record_of(m, _WHERE) for m in got["metadatas"] or []])
        raw = opened.raw_vectors()
        cache.put(sids, raw)
        for j, sid in enumerate(sids):
            self.at[sid], self.vector[sid] = (opened, j), raw[j]

    def payload(self, stored_id: str) -> SealedPayload:
        records, j = self.at[stored_id]
        return records.payload(j)


def _check_size(fresh: np.ndarray, row: np.ndarray) -> np.ndarray:
    """``row``, once ``fresh`` (a record's vector) is known to have its size.

    Raises:
        SealedRecordError: it has another (the record of another encoder).
    """
    if fresh.shape != row.shape:
        raise SealedRecordError("the records of this collection do not all hold an exact vector of one size "
                                "(records sealed by another encoder)")
    return row


def _filled(opened: _Opened, stored_ids: list[str], mat: np.ndarray | None, missing: list[int]
            ) -> tuple[list[str], np.ndarray | None]:
    """The candidates that have a vector and their matrix: the cached rows, the ``missing``
    positions filled from the records this call fetched (a candidate deleted meanwhile drops out)."""
    if not missing:
        return stored_ids, mat
    gone = {j for j in missing if stored_ids[j] not in opened.vector}
    for j in missing:
        if j not in gone and mat is not None:
            _check_size(opened.vector[stored_ids[j]], mat[j])
            mat[j] = opened.vector[stored_ids[j]]
    keep = [j for j in range(len(stored_ids)) if j not in gone]
    if mat is None:
        rows = [opened.vector[stored_ids[j]] for j in keep]
        return [stored_ids[j] for j in keep], (np.stack(rows) if rows else None)
    return [stored_ids[j] for j in keep], (mat[keep] if keep else None)


def _verified(collection: Any, sealer: Sealer, cache: ExactVectorCache, opened: _Opened, sids: list[str],
              mat: np.ndarray, clean: np.ndarray, k: int, space: str) -> Ranked:
    """Re-rank ``sids`` by ``mat`` (float32) until each of the ``k`` kept is opened and holds the
    vector that ranked it (a changed one replaces its row; one deleted meanwhile drops out).

    Raises:
        SealedRecordError: a record holds a vector of another size (another encoder's).
    """
    alive = np.ones(len(sids), dtype=bool)
    for _ in range(len(sids) + 1):  # each round opens or corrects at least one of the kept
        idx = np.flatnonzero(alive)
        order, dist = rerank(clean, mat[idx], k, space)
        kept = [int(idx[j]) for j in order]
        opened.fetch(collection, sealer, cache, [sids[j] for j in kept])
        changed = False
        for j in kept:
            fresh = opened.vector.get(sids[j])
            if fresh is None:  # deleted since the query found it
                alive[j], changed = False, True
                cache.discard([sids[j]])
            elif not np.array_equal(fresh.astype(np.float32), _check_size(fresh, mat[j])):
                mat[j], changed = fresh, True
        if not changed:
            return [(opened.payload(sids[int(idx[j])]), float(d)) for j, d in zip(order, dist, strict=True)]
    raise AssertionError("unreachable: every round settles one candidate")  # pragma: no cover


def ranked_warm(collection: Any, sealer: Sealer, cache: ExactVectorCache, sent: np.ndarray,
                clean: np.ndarray, k_fetch: int, k: int, where: Any, space: str) -> list[Ranked]:
    """Per query the ``k`` nearest of ``k_fetch`` candidates as (payload, distance), asking
    Chroma for ids only (see the module docstring)."""
    res = collection.query(query_embeddings=np.asarray(sent), n_results=k_fetch, where=where or None, include=[])
    cands = [list(ids) for ids in res["ids"]]
    looked = [cache.take(sids) for sids in cands]
    opened = _Opened()  # (the candidates no query found cached: one get for all of them)
    opened.fetch(collection, sealer, cache, [sids[j] for sids, (_, missing) in zip(cands, looked, strict=True)
                                             for j in missing])
    out = []
    for q, (sids, (mat, missing)) in enumerate(zip(cands, looked, strict=True)):
        alive, rows = _filled(opened, sids, mat, missing)
        out.append([] if rows is None else _verified(collection, sealer, cache, opened, alive,
                                                     rows.astype(np.float32), clean[q], k, space))
    return out
