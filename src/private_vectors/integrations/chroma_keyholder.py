"""The key holder's calls on a native Chroma collection: :func:`query`, :func:`get`, :func:`delete`
(also ``private_vectors.chroma.query`` / ``get`` / ``delete``).

On a sealed collection (:mod:`private_vectors.integrations.chroma_sealed`) they open the sealed
records and return what an unsealed collection returns (the sanitized text, the metadata with
``pv_restore``), ranked by the exact vectors; on an unsealed one they are Chroma's own calls.
Nothing of chromadb is patched: ``collection.query`` and ``collection.get`` still work on a
sealed collection and return what it stores (ids, keyed markers, the readable metadata and the
records).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._validation import check_int
from ..embedding import PrivateEmbedding
from ..errors import Described, InvalidParameterError, InvalidTypeError
from ..keys import SecretKey, key_scope
from .chroma import _rebuild, check_collection, load_query_index, protected_write, save_query_index
from .chroma_sealed import check_where, delete_sealed, get_sealed, query_sealed, sealer_of

__all__ = ["delete", "get", "query"]


def _embedding_for(collection: Any, embedding: Any, key: Any) -> Any:
    """The PrivateEmbedding to read ``collection`` with: ``embedding`` (checked), the
    collection's own when it has a key, else the stored one rebuilt with ``key`` (or
    ``PRIVATE_VECTORS_KEY``); None for a collection no PrivateEmbedding wrote."""
    if embedding is not None:
        if key is not None:
            raise InvalidParameterError("key", "no key together with embedding (the function has its own)",
                                        Described("<a key>"))
        if not isinstance(embedding, PrivateEmbedding):
            raise InvalidTypeError("embedding", "a PrivateEmbedding", embedding)
        check_collection(collection, embedding)
        return embedding
    own = getattr(collection, "_embedding_function", None)
    if key is None and isinstance(own, PrivateEmbedding) and own.pipeline.keying.keyed:
        check_collection(collection, own)  # binds it to the collection's data key (a get_collection(ef=...))
        return own
    cfg = (getattr(collection, "configuration_json", None) or {}).get("embedding_function") or {}
    try:
        secret = SecretKey.resolve(key, min_bytes=1)
    finally:
        del key
    if cfg.get("name") != "private_vectors" or secret is None:
        return own if isinstance(own, PrivateEmbedding) else None
    with key_scope(secret):
        ef = _rebuild(cfg.get("config") or {}, collection.name)
    check_collection(collection, ef)
    load_query_index(collection, ef)
    return ef


def query(collection: Any, query_texts: Sequence[str], n_results: int = 10, where: Any = None,
          where_document: Any = None, *, embedding: Any = None, key: Any = None,
          candidates: int | str = "auto") -> dict[str, Any]:
    """Query ``collection`` as its key holder.

    A sealed collection: each query's clean vector re-ranks K noisy candidates fetched in one
    Chroma query (K = :func:`~private_vectors.sealed.candidate_count` of ``n_results``, ε and
    the collection's size, or ``candidates``) by their exact vectors, in the collection's space.
    The size is a ``count()`` at most 10 s old (asked again after that), so most queries are one
    round trip; a held size never caps K below the rule's floor (Chroma returns at most what it holds).
    An unsealed collection: ``collection.query(query_texts=..., ...)`` as Chroma answers it.

    Args:
        collection: a Chroma collection written by a PrivateEmbedding.
        query_texts: the queries (they go through the text stage, as Chroma's query does).
        n_results: results per query.
        where: a Chroma metadata filter; on a sealed collection only on its readable metadata keys.
        where_document: a Chroma document filter (refused on a sealed collection).
        embedding: the collection's PrivateEmbedding (default: its own when it has a key).
        key: the key, when the collection's function was rebuilt without one (default:
            ``PRIVATE_VECTORS_KEY``); not together with ``embedding``.
        candidates: ``"auto"`` (the rule) or how many noisy candidates to fetch.

    Returns:
        Chroma's query result layout: ``ids`` (your ids), ``documents`` (the sanitized text),
        ``metadatas`` (your metadata, ``pv_restore`` included) and ``distances`` (exact, in the
        collection's space), one list per query; a sealed collection adds ``candidates`` (K).

    Raises:
        SealedStoreError: naming ``key``, for a sealed collection read without its key.
        InvalidParameterError: a filter on a sealed field or ``where_document`` on a sealed collection.
    """
    if isinstance(query_texts, str):
        raise InvalidTypeError("query_texts", "a list of strings", Described("<str>"), note="wrap a single query in a list")
    n_results = check_int(n_results, "n_results", minimum=1)
    ef = _embedding_for(collection, embedding, key)
    sealer = sealer_of(collection, ef)
    if sealer is None:
        return dict(collection.query(query_texts=list(query_texts), n_results=n_results, where=where,
                                     where_document=where_document, include=["documents", "metadatas", "distances"]))
    check_where(where, where_document, sealer)
    return query_sealed(collection, ef, sealer, list(query_texts), n_results, where, candidates=candidates)


def get(collection: Any, ids: Sequence[str] | None = None, where: Any = None, limit: int | None = None,
        offset: int | None = None, where_document: Any = None, *, embedding: Any = None,
        key: Any = None) -> dict[str, Any]:
    """Get documents of ``collection`` as its key holder: ``ids`` (your ids, in their order),
    ``documents`` (the sanitized text) and ``metadatas`` (your metadata, ``pv_restore``
    included). Unsealed: ``collection.get(...)``. Arguments as :func:`query`."""
    if isinstance(ids, str):
        raise InvalidTypeError("ids", "a list of ids", Described("<str>"), note="wrap a single id in a list")
    ef = _embedding_for(collection, embedding, key)
    sealer = sealer_of(collection, ef)
    if sealer is None:
        got = collection.get(ids=None if ids is None else list(ids), where=where, limit=limit, offset=offset,
                             where_document=where_document, include=["documents", "metadatas"])
        return {k: got[k] for k in ("ids", "documents", "metadatas")}
    check_where(where, where_document, sealer)
    return get_sealed(collection, sealer, None if ids is None else list(ids), where, limit, offset)


def delete(collection: Any, ids: Sequence[str], *, embedding: Any = None, key: Any = None) -> int:
    """Delete ``ids`` (your ids) from ``collection``; returns how many it held.

    A sealed collection loses each document's vector and record, and the keyed query-index
    entries no remaining document refers to (the references are inside the records; the
    remaining records are opened to count them: a cost in the collection's size); with a
    keyring (``Sealing(keyring=...)``) each document's key is destroyed, so no copy of the
    collection taken before the delete opens the document again. An unsealed collection:
    ``collection.delete(ids=ids)``.
    """
    if isinstance(ids, str):
        raise InvalidTypeError("ids", "a list of ids", Described("<str>"), note="wrap a single id in a list")
    ids = list(ids)
    if not ids:
        return 0
    ef = _embedding_for(collection, embedding, key)
    sealer = sealer_of(collection, ef)
    with protected_write(collection):
        if sealer is None:
            held = len(collection.get(ids=ids, include=[])["ids"])
            collection.delete(ids=ids)
            return held
        deleted = delete_sealed(collection, ef, sealer, ids)
        save_query_index(collection, ef)  # the entries no remaining document refers to go
        return deleted
