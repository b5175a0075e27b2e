"""The keyed query index of a Chroma collection, in a collection of its own.

The text stage's keyed query index (HMACs of the entity words it replaced, with their labels)
is kept in :func:`query_index_collection_name`: one record per HMAC, so each batch upserts only
its own entries (:func:`save_query_index`, :func:`write_query_index`) and concurrent writers
through a Chroma server lose none. The header of that collection is checked against the text
stage's key before anything is read or written. A reopened collection's index is read on the
text stage's first use (:func:`load_query_index`); one written by an earlier version (the whole
index as one JSON string in the collection's metadata) is read from there and moved on the next
write. Names are re-exported by :mod:`private_vectors.integrations.chroma`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from ..embedding import PrivateEmbedding
from ..errors import ArtefactError

QUERY_INDEX_KEY = "private_vectors:query_index"
"""Collection-metadata key of the keyed query index as written by earlier versions (one JSON
string, rewritten whole on every add); read and moved to the index collection on the next write."""
_INDEX_PREFIX = "pv-query-index-"
_INDEX_PAGE = 5000


def query_index_collection_name(collection: Any) -> str:
    """The name of the collection holding ``collection``'s keyed query index (one record per
    HMAC; named by the collection's id, so a rename keeps it)."""
    return f"{_INDEX_PREFIX}{collection.id}"


def _sanitizer_of(embedding: Any) -> Any:
    """The keyed text stage of ``embedding`` that keeps a query index, or None."""
    san = getattr(embedding, "sanitizer", None) if isinstance(embedding, PrivateEmbedding) else None
    if san is None or not getattr(san, "keyed", False) or not callable(getattr(san, "take_changes", None)):
        return None
    return san


def _existing_index_collection(collection: Any) -> Any:
    """The keyed query index collection of ``collection`` as a model with an ``id`` (no key
    check: only its files are touched), or None."""
    server = getattr(collection, "_client", None)
    if server is None:
        return None
    try:
        model = server.get_collection(name=query_index_collection_name(collection), tenant=collection.tenant,
                                      database=collection.database)
    except Exception as exc:  # Chroma raises NotFoundError (a ValueError in older versions)
        if "not exist" in str(exc).lower() or "not found" in str(exc).lower():
            return None
        raise
    from chromadb.api.models.Collection import Collection

    return Collection(client=server, model=model, embedding_function=None)


def _index_collection(collection: Any, sanitizer: Any, *, create: bool) -> Any:
    """The index collection of ``collection`` (created when ``create``), its header checked
    against ``sanitizer``'s key; None when absent and not created."""
    if create:
        from chromadb.api.models.Collection import Collection

        server = collection._client
        header = {k: v for k, v in sanitizer.get_state_header().items() if v is not None}
        model = server.get_or_create_collection(name=query_index_collection_name(collection),
                                                metadata={**header, "private_vectors:for": collection.name},
                                                configuration={"hnsw": {"space": "l2"}}, tenant=collection.tenant,
                                                database=collection.database)
        side = Collection(client=server, model=model, embedding_function=None)
    else:
        side = _existing_index_collection(collection)
        if side is None:
            return None
    sanitizer.check_state(dict(side.metadata or {}))
    return side


def _position(mac: str) -> list[float]:
    """A record's (unused) one-dimensional vector: distinct per HMAC, since Chroma's HNSW
    index slows down on many identical points."""
    return [int(mac[:8], 16) / 2**32]


def save_query_index(collection: Any, embedding: Any) -> bool:
    """Write the entries the last batch added to ``embedding``'s keyed query index (and
    delete those it dropped) into the collection's index collection; False without a keyed
    text stage. The cost is the batch's, not the index's; concurrent writers through one
    Chroma server each upsert their own entries (records keyed by HMAC), so none is lost.
    A collection written by an earlier version (the index in its metadata) is migrated here."""
    san = _sanitizer_of(embedding)
    if san is None:
        return False
    write_query_index(collection, san, san.take_changes())
    return True


def write_query_index(collection: Any, san: Any, changes: Mapping[str, str | None]) -> None:
    """Write keyed index ``changes`` (HMAC -> label, None: removed) into ``collection``'s index
    collection, checked against ``san``'s key (also the one writer of a Ray job's index)."""
    legacy = QUERY_INDEX_KEY in (collection.metadata or {})
    if not changes and not legacy:
        return
    side = _index_collection(collection, san, create=True)
    if legacy:  # migrate: every entry once, then the metadata copy goes
        changes = {**san.get_state()["entries"], **changes}
    added = [(k, v) for k, v in changes.items() if v is not None]
    removed = [k for k, v in changes.items() if v is None]
    for start in range(0, len(added), _INDEX_PAGE):
        part = added[start:start + _INDEX_PAGE]
        side.upsert(ids=[k for k, _ in part], embeddings=[_position(k) for k, _ in part],
                    metadatas=[{"l": v} for _, v in part])
    for start in range(0, len(removed), _INDEX_PAGE):
        side.delete(ids=removed[start:start + _INDEX_PAGE])
    if legacy:
        meta = {k: v for k, v in (collection.metadata or {}).items() if k != QUERY_INDEX_KEY}
        collection.modify(metadata=meta or {"private_vectors:query_index_moved": True})


def load_query_index(collection: Any, embedding: Any) -> bool:
    """Arrange for ``embedding``'s text stage to load ``collection``'s keyed query index on its
    first use (from the index collection and, for a collection written by an earlier version,
    its metadata); False when there is no keyed text stage. The key is checked when the index
    is loaded. Called by :func:`open_collection` and the drop-in stores; a collection reopened
    with ``client.get_collection`` needs this call."""
    san = _sanitizer_of(embedding)
    if san is None:
        return False
    defer = getattr(san, "defer_state", None)
    loader = functools.partial(_read_index, collection, san)
    if callable(defer):
        defer(loader)
    else:  # pragma: no cover - a custom text stage without lazy loading
        state = loader()
        if state is not None:
            embedding.pipeline.load_query_index_state(state)
    return True


def _read_index(collection: Any, sanitizer: Any) -> dict[str, Any] | None:
    """The stored index as a ``Sanitizer.get_state()`` dict (None when there is none)."""
    entries: dict[str, str] = {}
    header: dict[str, Any] | None = None
    raw = (collection.metadata or {}).get(QUERY_INDEX_KEY)
    if raw:
        try:
            legacy = json.loads(raw)
        except ValueError as exc:
            raise ArtefactError(f"collection {collection.name!r}: {QUERY_INDEX_KEY} is not valid JSON") from exc
        sanitizer.check_state(legacy)
        entries.update({str(k): str(v) for k, v in (legacy.get("entries") or {}).items()})
        header = legacy
    side = _index_collection(collection, sanitizer, create=False)
    if side is not None:
        header = dict(side.metadata or {})
        offset = 0
        while True:
            got = side.get(include=["metadatas"], limit=_INDEX_PAGE, offset=offset)
            entries.update({i: str((m or {}).get("l", "")) for i, m in zip(got["ids"], got["metadatas"], strict=True)})
            if len(got["ids"]) < _INDEX_PAGE:
                break
            offset += _INDEX_PAGE
    if header is None:
        return None
    return {**{k: v for k, v in header.items() if not k.startswith("private_vectors:")}, "entries": entries}
