"""The caller's ids of a :class:`~private_vectors.integrations.faiss.PrivateFaissIndex` and the
internal 64-bit ids FAISS holds: checking a batch's ids, and finding the ids the index holds.

Integer ids are FAISS's own; string ids (and, in a sealed index with ``ids="hmac"``, their keyed
HMACs) are mapped onto consecutive integers (``store._keys`` / ``store._by_key``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import Described, InvalidParameterError, InvalidTypeError
from ._stored import check_unique_ids, positions


def check_ids(store: Any, ids: Any, count: int) -> list[Any] | None:
    """``ids`` as a list of all-int or all-str ids, unique and new, or None."""
    if ids is None:
        return None
    if isinstance(ids, (str, bytes)):
        raise InvalidTypeError("ids", f"{count} ids (a list)", ids, note="wrap a single id in a list")
    items = list(ids)
    if len(items) != count:
        raise InvalidParameterError("ids", f"{count} ids (one per text)", Described(f"{len(items)} ids"))
    if not items:
        return None
    if all(isinstance(i, str) for i in items):
        if any(not i for i in items):
            raise InvalidParameterError("ids", "non-empty ids", Described(f"an empty id at position {items.index('')}"))
        check_unique_ids(items, "the index")
        _refuse_held([n for n, i in enumerate(items) if store._held_key(i) in store._by_key])
        return items
    if not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in items):
        raise InvalidTypeError("ids", f"{count} integer ids or {count} string ids",
                               Described(f"ids of types {sorted({type(i).__name__ for i in items})}"))
    ints = [int(i) for i in items]
    if store._keys:
        raise InvalidParameterError("ids", "string ids (this index already uses string ids)",
                                    Described(f"{len(ints)} integer ids"))
    check_unique_ids(ints, "the index")
    _refuse_held([n for n, i in enumerate(ints) if i in store.texts])
    return ints


def internal_ids(store: Any, ids: Sequence[Any], name: str = "ids") -> list[int]:
    """Internal ids of the caller's ``ids`` (str ids through the id map).

    Raises:
        InvalidParameterError: naming ``name``, for ids the index does not hold (by position).
    """
    if isinstance(ids, (str, bytes)):
        raise InvalidTypeError(name, "a list of ids", ids, note="wrap a single id in a list")
    out, missing = [], []
    for n, i in enumerate(ids):
        key = store._held_key(str(i) if store._hmac_ids else i)
        if isinstance(key, str):
            got = store._by_key.get(key)
        elif isinstance(key, (int, np.integer)) and not isinstance(key, bool) and not store._keys:
            got = int(key) if int(key) in store.texts else None
        else:
            got = None
        if got is None:
            missing.append(n)
        else:
            out.append(got)
    if missing:
        raise InvalidParameterError(name, "ids the index holds", Described(positions(missing, "not held")))
    return out


def _refuse_held(held: list[int]) -> None:
    """An id the index holds is refused, by its position in the batch (a FAISS id map would keep
    both vectors under it)."""
    if held:
        raise InvalidParameterError("ids", "ids not already in the index (delete them first)",
                                    Described(positions(held, "held")))
