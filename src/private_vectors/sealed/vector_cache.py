"""The key holder's exact-vector cache: what a sealed store's reader keeps of the records it opened.

A key holder's query ranks K noisy candidates by their exact vectors, which live inside the
sealed records; fetching and opening K records per query is most of its cost. The reader keeps
the exact vectors it has opened in memory (:class:`ExactVectorCache`, the idea of FAISS's
``IndexRefineFlat``), so a warm query asks the store for the candidates' ids only, re-ranks them
by the cached vectors and fetches and opens only the records it returns and those not cached.

Vectors are kept exactly as the records hold them (the store's ``Sealing.vector``: float16 by
default, float32 when sealed so), so a re-rank by cached vectors gives the same order and the same
distances as one by freshly opened records. The cache is bounded by a byte budget
(``Sealing.vector_cache``), evicts the least recently used vector, and optionally forgets a
vector after ``Sealing.vector_cache_max_age`` seconds. It lives in memory only, one per
:class:`~private_vectors.sealed.Sealer` and store (:class:`VectorCaches`), and is never written,
logged, shown in a repr or pickled: exact vectors are close to invertible.

Writes and deletes through the library's paths discard the ids they touch (:meth:`Sealer.seal_many`,
:meth:`Sealer.forget`); a write by another process or another function object is not seen here,
which is why the reader checks every record it returns against the vector that ranked it
(:mod:`private_vectors.integrations.chroma_cached`).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._validation import check_int, check_positive_finite
from ..errors import InvalidParameterError

__all__ = ["DEFAULT_BUDGET", "ENTRY_OVERHEAD", "ExactVectorCache", "VectorCaches", "check_budget", "check_max_age"]

DEFAULT_BUDGET = 64 * 2**20
"""Default byte budget of one store's cache: about 87,000 float16 vectors of 384 dimensions."""
ENTRY_OVERHEAD = 128
"""Bytes counted per cached vector beside the vector itself (its id, its place in the LRU order)."""
_FIRST_ROWS = 1024


def check_budget(value: Any, name: str = "vector_cache") -> int:
    """``value`` as a byte budget: an int >= 0 (0 turns the cache off).

    Raises:
        InvalidTypeError, InvalidParameterError: naming ``name``.
    """
    return check_int(value, name, minimum=0)


def check_max_age(value: Any, name: str = "vector_cache_max_age") -> float | None:
    """``value`` as a maximum age in seconds: None (no limit) or a finite number > 0.

    Raises:
        InvalidTypeError, InvalidParameterError: naming ``name``.
    """
    return None if value is None else check_positive_finite(value, name)


class ExactVectorCache:
    """Stored id → exact vector, in one matrix, bounded by ``budget`` bytes (LRU eviction).

    Thread-safe. The first vector put fixes the dimension and dtype; a vector of another shape or
    dtype (records of another encoder) empties the cache and starts again with it.

    Args:
        budget: bytes the cache may hold (vectors plus :data:`ENTRY_OVERHEAD` per vector), > 0.
        max_age: seconds after which a vector counts as absent (None: kept until evicted).
        clock: the time source (``time.monotonic``; tests pass their own).
    """

    def __init__(self, budget: int, *, max_age: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if check_budget(budget, "budget") == 0:
            raise InvalidParameterError("budget", "an int number of bytes > 0", budget)
        self.budget, self.max_age, self._clock = budget, check_max_age(max_age, "max_age"), clock
        self._lock = threading.Lock()
        self._slots: OrderedDict[str, int] = OrderedDict()  # LRU order: oldest first
        self._mat: np.ndarray | None = None
        self._born = np.zeros(0)
        self._free: list[int] = []
        self.hit_rate = 0.0
        """The share of looked-up candidates found, averaged over recent lookups (halved each time)."""

    def __repr__(self) -> str:
        return f"ExactVectorCache(<{len(self)} vectors>, {self.nbytes} of {self.budget} bytes)"

    def __reduce__(self) -> Any:
        raise TypeError("ExactVectorCache holds exact vectors and is never pickled")

    def __len__(self) -> int:
        return len(self._slots)

    @property
    def nbytes(self) -> int:
        """Bytes held: the vector matrix as allocated plus the per-entry overhead."""
        return (0 if self._mat is None else int(self._mat.nbytes)) + ENTRY_OVERHEAD * len(self._slots)

    @property
    def capacity(self) -> int | None:
        """How many vectors fit in the budget (None before the first vector fixes their size)."""
        return None if self._mat is None else self._capacity(self._mat.shape[1], self._mat.dtype)

    def _capacity(self, dim: int, dtype: np.dtype[Any]) -> int:
        return self.budget // (dim * dtype.itemsize + ENTRY_OVERHEAD)

    def clear(self) -> None:
        """Forget every vector (and the matrix, and the hit rate)."""
        with self._lock:
            self._slots.clear()
            self._mat, self._born, self._free = None, np.zeros(0), []
            self.hit_rate = 0.0

    def discard(self, ids: Sequence[str]) -> int:
        """Forget the vectors of ``ids`` (stored ids); returns how many were held."""
        with self._lock:
            return sum(self._drop(i) for i in ids)

    def _drop(self, stored_id: str) -> bool:
        slot = self._slots.pop(stored_id, None)
        if slot is None:
            return False
        assert self._mat is not None
        self._mat[slot] = 0  # (the vector's bytes do not linger in the free row)
        self._free.append(slot)
        return True

    def take(self, ids: Sequence[str]) -> tuple[np.ndarray | None, list[int]]:
        """(a matrix with the cached vector of each of ``ids`` at its position, zeros where absent;
        the positions absent), the ones found marked recently used. The matrix is None when
        the cache holds nothing yet."""
        with self._lock:
            if self._mat is None:
                self._observe(0, len(ids))
                return None, list(range(len(ids)))
            now = self._clock() if self.max_age is not None else 0.0
            slots, missing = np.zeros(len(ids), dtype=np.int64), []
            for j, sid in enumerate(ids):
                slot = self._slots.get(sid)
                if slot is not None and self.max_age is not None and now - self._born[slot] > self.max_age:
                    self._drop(sid)
                    slot = None
                if slot is None:
                    missing.append(j)
                    slots[j] = -1
                else:
                    self._slots.move_to_end(sid)
                    slots[j] = slot
            out = self._mat[np.maximum(slots, 0)]
            if missing:
                out[missing] = 0
            self._observe(len(ids) - len(missing), len(ids))
            return out, missing

    def held(self, ids: Sequence[str], *, observe: bool = True) -> int:
        """How many of ``ids`` are cached (counted into :attr:`hit_rate` when ``observe``;
        nothing marked used)."""
        with self._lock:
            found = sum(1 for i in ids if i in self._slots)
            if observe:
                self._observe(found, len(ids))
            return found

    def _observe(self, found: int, total: int) -> None:
        if total:
            self.hit_rate = 0.5 * self.hit_rate + 0.5 * found / total

    def put(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Keep ``vectors`` (one row per id, the records' own dtype) as the most recently used,
        evicting the least recently used beyond the budget (a vector too large for it is not kept)."""
        vecs = np.asarray(vectors)
        if len(ids) != vecs.shape[0] or vecs.ndim != 2 or vecs.shape[1] == 0:
            raise InvalidParameterError("vectors", f"{len(ids)} rows (one per id)", vecs)
        with self._lock:
            if self._mat is not None and (self._mat.shape[1] != vecs.shape[1] or self._mat.dtype != vecs.dtype):
                self._slots.clear()
                self._mat, self._born, self._free = None, np.zeros(0), []
            cap = self._capacity(vecs.shape[1], vecs.dtype)
            if cap == 0:
                return
            ids, vecs = list(ids)[-cap:], vecs[-cap:]
            slots = [self._slot_for(sid, vecs.shape[1], vecs.dtype, cap) for sid in ids]
            assert self._mat is not None
            self._mat[slots] = vecs
            if self.max_age is not None:
                self._born[slots] = self._clock()

    def _slot_for(self, stored_id: str, dim: int, dtype: np.dtype[Any], cap: int) -> int:
        """The row for ``stored_id`` (its own, a free one, a new one or the least recently used)."""
        slot = self._slots.get(stored_id)
        if slot is not None:
            self._slots.move_to_end(stored_id)
            return slot
        if not self._free:
            if self._mat is None or self._mat.shape[0] < cap:
                self._grow(dim, dtype, cap)
            else:
                self._drop(next(iter(self._slots)))
        slot = self._free.pop()
        self._slots[stored_id] = slot
        return slot

    def _grow(self, dim: int, dtype: np.dtype[Any], cap: int) -> None:
        old = 0 if self._mat is None else self._mat.shape[0]
        rows = min(cap, max(_FIRST_ROWS, 2 * old))
        mat = np.zeros((rows, dim), dtype=dtype)
        born = np.zeros(rows)
        if self._mat is not None:
            mat[:old], born[:old] = self._mat, self._born
        self._mat, self._born = mat, born
        self._free.extend(range(rows - 1, old - 1, -1))


class VectorCaches:
    """One :class:`ExactVectorCache` per store a :class:`~private_vectors.sealed.Sealer` reads
    (a Chroma collection's id), each with the sealer's budget; discarding an id reaches all.

    Args:
        budget: bytes per store (0: no cache).
        max_age: see :class:`ExactVectorCache`.
    """

    def __init__(self, budget: int, max_age: float | None = None) -> None:
        self.budget, self.max_age = check_budget(budget), check_max_age(max_age)
        self._caches: dict[str, ExactVectorCache] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"VectorCaches(<{len(self._caches)} stores>, budget={self.budget})"

    def __reduce__(self) -> Any:
        raise TypeError("VectorCaches holds exact vectors and is never pickled")

    def of(self, store: str) -> ExactVectorCache | None:
        """The cache of ``store`` (made on first use), or None when the budget is 0."""
        if not self.budget:
            return None
        with self._lock:
            cache = self._caches.get(store)
            if cache is None:
                cache = self._caches[store] = ExactVectorCache(self.budget, max_age=self.max_age)
            return cache

    def discard(self, ids: Sequence[str]) -> int:
        """Forget ``ids`` (stored ids) in every store's cache; returns how many were held."""
        with self._lock:
            caches = list(self._caches.values())
        return sum(c.discard(ids) for c in caches)

    def clear(self) -> None:
        """Forget every vector of every store."""
        with self._lock:
            caches = list(self._caches.values())
        for c in caches:
            c.clear()
