"""Sealed rows on Ray (:mod:`private_vectors.integrations.ray`): with a keyed configuration the
rows :class:`~private_vectors.integrations.ray.ProtectDocuments` emits hold no readable text.

A sealed row is ``id`` (:meth:`~private_vectors.sealed.Sealer.stored_id`), ``document`` (the keyed
marker), ``embedding`` (the noisy vector), ``metadata`` (JSON: the readable metadata keys and
:data:`~private_vectors.sealed.SEALED_KEY` → the record holding the sanitized text, the
metadata, the restore record and the exact vector). Every worker rebuilds the store's
configuration, whose wrapped data key it unwraps with the key it reads itself, so all workers
seal under one data key. AES-GCM-SIV with a nonce derived from the record's associated data
makes a record a function of its document: a retried task writes the same bytes, and the
sinks' idempotent writes stay idempotent. :func:`open_rows` opens rows for the key holder
(from Parquet files, FAISS shard sidecars or any copy of the rows).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..sealed.records import SealedPayload
from ..sealed.stores import record_of, seal_rows, sealer_of

__all__ = ["open_rows", "sealed_columns"]


def sealed_columns(sealer: Any, ids: list[str], *, stored: Sequence[str | None] | None, vectors: Any, exact: Any,
                   restores: Sequence[str | None] | None, metas: Sequence[Mapping[str, Any] | None] | None,
                   refs: Sequence[Sequence[str]] | None, index: list[str]) -> dict[str, Any]:
    """The columns of a sealed batch (see the module docstring)."""
    rows = seal_rows(sealer, ids, texts=stored, metadatas=metas, vectors=exact, restores=restores, refs=refs)
    return {
        "id": np.array(rows.stored_ids, dtype=object),
        "document": np.array(rows.markers, dtype=object),
        "embedding": np.asarray(vectors, dtype=np.float32),
        "metadata": np.array([json.dumps(m, sort_keys=True) for m in rows.metadatas], dtype=object),
        "pv_index": np.array(index[: len(ids)], dtype=object),
    }


def open_rows(embedding: Any, ids: Sequence[str], metadatas: Sequence[Any]) -> list[SealedPayload]:
    """The key holder's records of sealed rows: ``ids`` as stored, ``metadatas`` as written
    (JSON strings or dicts).

    Raises:
        SealedStoreError: ``embedding`` does not seal (no key), or a row holds no record;
        SealedRecordError: a record that does not open (another key or store, an edit).
    """
    from ..errors import SealedStoreError

    sealer = sealer_of(embedding)
    if sealer is None:
        raise SealedStoreError("key: these rows are sealed; open them with the store's PrivateEmbedding and its key")
    metas = [json.loads(m) if isinstance(m, str) and m else (m or {}) for m in metadatas]
    return sealer.open_many(list(ids), [record_of(m, "these Ray rows") for m in metas])
