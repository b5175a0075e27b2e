"""LangChain's records keyed by content, for the stores that accept a ``CacheBackedEmbeddings``
over a PrivateEmbedding or LangChain ``index()``'s ids (:mod:`private_vectors.integrations.langchain_records`,
imported only when such an object is given, so the stores need no ``langchain-classic``)."""

from __future__ import annotations

from typing import Any

from ..embedding import PrivateEmbedding
from ..errors import ModelNotAvailableError

__all__ = ["prepare_cached", "unwrap_cache", "warn_if_raw_hash_ids"]


def unwrap_cache(embedding: Any) -> tuple[Any, Any]:
    """(the PrivateEmbedding, its vector cache) for a ``CacheBackedEmbeddings`` over a
    PrivateEmbedding (:mod:`private_vectors.integrations.langchain_records`); else (``embedding``, None)."""
    if embedding is None or isinstance(embedding, PrivateEmbedding):
        return embedding, None
    try:
        from .langchain_records import unwrap
    except ModelNotAvailableError:  # pragma: no cover - no langchain-classic, so no CacheBackedEmbeddings
        return embedding, None
    return unwrap(embedding)


def prepare_cached(embedding: Any, cache: Any, texts: list[str], ids: list[str], *,
                   store_raw_text: bool) -> tuple[list[str] | None, Any, list[str] | None]:
    """:func:`~private_vectors.restore.prepare_with_restore`, through ``cache`` when there is one."""
    if cache is None:
        from ..restore import prepare_with_restore

        return prepare_with_restore(embedding, texts, ids, store_raw_text=store_raw_text)
    from .langchain_records import prepare_cached as through_cache

    return through_cache(embedding, cache, texts, ids, store_raw_text=store_raw_text)


def warn_if_raw_hash_ids(store: Any, texts: list[str], metadatas: Any, ids: Any) -> None:
    """One PrivacyWarning per store when ``ids`` are LangChain ``index()``'s unkeyed hashes."""
    try:
        from .langchain_records import warn_if_raw_hash_ids as check
    except ModelNotAvailableError:  # pragma: no cover
        return
    check(store, texts, metadatas, ids)
