"""One pass for a sealed store's add: each text sanitized once, embedded, and what the record holds.

Shared by the sealed non-Chroma paths (LangChain FAISS, LlamaIndex, Ray): the text kept (the
sanitized text; the raw text with ``store_raw_text=True``; None without a text stage), the noisy
vectors the store searches, the exact vectors (after erasure, before noise), the restore records
and each document's keyed query-index entries (:func:`~private_vectors.sealed.stores.document_refs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..restore import sanitize_recorded, seal_records
from ..sealed.stores import document_refs

__all__ = ["SealedPrepared", "prepare_sealed"]


@dataclass(frozen=True, repr=False)
class SealedPrepared:
    """What :func:`prepare_sealed` gives (holds texts: memory only)."""

    kept: list[str | None]
    vectors: np.ndarray
    exact: np.ndarray
    restores: list[str | None] | None
    refs: list[list[str]] | None

    def __repr__(self) -> str:
        return f"SealedPrepared(<{len(self.kept)} documents>)"


def prepare_sealed(embedding: Any, texts: Sequence[str], ids: Sequence[Any], *,
                   store_raw_text: bool = False) -> SealedPrepared:
    """Sanitize ``texts`` once, embed them (noisy and exact), seal their restore records by ``ids``."""
    items = list(texts)
    sanitized, logs = sanitize_recorded(embedding, items, store_raw_text=store_raw_text)
    noisy, exact = embedding.pipeline.embed_sanitized(sanitized, raw=items, exact=True)
    kept = embedding.pipeline.texts_to_store(items, sanitized, store_raw_text=store_raw_text)
    return SealedPrepared(kept=list(kept) if kept is not None else [None] * len(items),
                          vectors=np.asarray(noisy, dtype=np.float32), exact=np.asarray(exact, dtype=np.float32),
                          restores=seal_records(embedding, list(ids), items, sanitized, logs),
                          refs=document_refs(embedding, items, logs))
