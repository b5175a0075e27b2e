"""Encrypted restore data: the key holder gets the real values back; nobody else does.

A keyed text stage writes surrogates (``Saanvi Brandt``) or typed placeholders (``<PERSON>``)
into the stored documents. For each document, the values it replaced are sealed into a
**restore record** stored beside the document (Chroma metadata ``pv_restore``, a FAISS JSON
sidecar, LlamaIndex node metadata). There is no mapping table anywhere, in memory or on disk:

* the record is AES-256-GCM (NIST SP 800-38D) under a subkey of the user's key, derived from
  the stretched key with HKDF-SHA256 (RFC 5869) and its own label ``private_vectors/v2/restore``
  (:class:`private_vectors.keys.KeySchedule`), with a random 96-bit nonce per record;
* its associated data binds it to the collection's salt, the document's id and a digest of
  the configuration (:func:`config_digest`): a record copied onto another document, or into
  another collection, fails authentication;
* its plaintext (the replaced spans: offsets in the stored text, label, value written,
  original value, and the SHA-256 of the stored text) is padded to a power-of-two size class
  of at least 256 bytes, so its length says little more than "few" or "many" replacements.

:func:`restore` (and :meth:`Restorer.restore_documents`) puts the originals back **at the
recorded offsets** of each document, after checking that the document's text is the one the
record was made for; it never does a global string replace. A wrong key, an edited record, a
record of another document or collection, or an edited document raise :class:`RestoreError`;
nothing is ever half-restored.

:meth:`Restorer.restore_answer` restores an LLM answer built from retrieved documents. An
answer has no offsets, so its rule is string-based and conservative (see its docstring).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._progress import counts_documents
from .._validation import check_stage_output, check_texts
from ..errors import InvalidParameterError, InvalidTypeError
from .records import (
    RESTORE_KEY,
    RESTORE_NOTE,
    Replacement,
    RestoreData,
    RestoreError,
    _record_entries,
    config_digest,
    paired_ids,
)
from .restorer import RECORD_PREFIX, Restorer  # noqa: F401 (a record's form, read by benchmarks/restore.py)

__all__ = [
    "RESTORE_KEY",
    "RESTORE_NOTE",
    "Replacement",
    "RestoreData",
    "RestoreError",
    "Restorer",
    "config_digest",
    "prepare_with_restore",
    "restore",
    "restore_answer",
    "restorer_for",
    "sanitize_recorded",
    "seal_records",
    "wants_restore",
    "with_records",
]


# -- store paths --------------------------------------------------------------------------------
def wants_restore(embedding: Any, *, store_raw_text: bool = False) -> bool:
    """Whether a store path keeps restore records for ``embedding``: a keyed text stage whose
    sanitized text is what is stored (with ``store_raw_text`` the originals are stored anyway)."""
    sanitizer = getattr(embedding, "sanitizer", None)
    return (not store_raw_text and sanitizer is not None and getattr(sanitizer, "secret", None) is not None
            and callable(getattr(sanitizer, "apply_recorded", None)))


def sanitize_recorded(embedding: Any, texts: Sequence[str], *,
                      store_raw_text: bool = False) -> tuple[list[str], list[Any] | None]:
    """``embedding.sanitize_documents(texts)`` plus the text stage's replacement log per text
    (None when the store path keeps no restore records: see :func:`wants_restore`)."""
    if not wants_restore(embedding, store_raw_text=store_raw_text):
        return embedding.sanitize_documents(texts), None
    items = check_texts(texts, "texts")
    if not items:
        return [], []
    out, logs = embedding.sanitizer.apply_recorded(items)
    return check_stage_output(out, items, "sanitizer.apply_recorded"), logs


def seal_records(embedding: Any, ids: Sequence[Any], texts: Sequence[str], sanitized: Sequence[str],
                 logs: Sequence[Any] | None) -> list[str] | None:
    """The restore record of each document (None when ``logs`` is None). Call it once the
    documents were embedded (the embedding's salt is then the collection's)."""
    if logs is None:
        return None
    items = list(texts)
    ids = paired_ids(ids, items)
    restorer = Restorer.for_embedding(embedding)
    return [restorer.seal(i, o, _record_entries(t, o, log))
            for i, t, o, log in zip(ids, items, sanitized, logs, strict=True)]


@counts_documents("texts")
def prepare_with_restore(embedding: Any, texts: Sequence[str], ids: Sequence[Any], *,
                         store_raw_text: bool = False) -> tuple[list[str] | None, Any, list[str] | None]:
    """``embedding.prepare_documents`` plus each document's restore record.

    Each text is sanitized once; that text is embedded and stored, and its record is sealed
    under the collection's key (call it after the store recorded or checked the embedding's
    config, so the salt is the collection's). Without a keyed text stage, or with
    ``store_raw_text``, it is ``prepare_documents`` with ``None`` records.

    Returns:
        (texts to store or None, vectors, records or None)
    """
    items = check_texts(texts, "texts")
    ids = paired_ids(ids, items)
    if not wants_restore(embedding, store_raw_text=store_raw_text):
        stored, vectors = embedding.prepare_documents(items, store_raw_text=store_raw_text)
        return stored, vectors, None
    pipeline = embedding.pipeline
    sanitized, logs = sanitize_recorded(embedding, items)
    vectors = pipeline.embed_sanitized(sanitized, raw=items)  # fixes the salt when no store recorded one
    stored = pipeline.texts_to_store(items, sanitized, store_raw_text=False)
    return stored, vectors, seal_records(embedding, ids, items, sanitized, logs)


def with_records(metadatas: Sequence[Mapping[str, Any] | None] | None, records: Sequence[str] | None,
                 n: int) -> list[dict[str, Any] | None] | None:
    """Per-document metadata with the restore record under :data:`RESTORE_KEY` (None: unchanged)."""
    if records is None:
        return None if metadatas is None else [None if m is None else dict(m) for m in metadatas]
    metas = list(metadatas or [])
    metas += [None] * (n - len(metas))
    return [{**dict(m or {}), RESTORE_KEY: r} for m, r in zip(metas, records, strict=True)]


# -- one-call helpers ---------------------------------------------------------------------------
def restore(documents: Sequence[Any], embedding: Any = None, *, restorer: Restorer | None = None,
            missing: str = "raise") -> list[Any]:
    """Restore retrieved documents for the key holder (see :meth:`Restorer.restore_documents`).

    Args:
        documents: LangChain Documents, LlamaIndex nodes, or ``(id, text, record)`` tuples.
        embedding: the keyed PrivateEmbedding of their store (or pass ``restorer``).
        restorer: a :class:`Restorer` (built once: faster for many calls).
        missing: ``"raise"`` or ``"keep"`` for a document without a record.
    """
    return restorer_for(embedding, restorer).restore_documents(documents, missing=missing)


def restore_answer(answer: str, documents: Sequence[Any], embedding: Any = None, *,
                   restorer: Restorer | None = None) -> str:
    """Restore an LLM answer built from ``documents`` (see :meth:`Restorer.restore_answer`)."""
    return restorer_for(embedding, restorer).restore_answer(answer, documents)


def restorer_for(embedding: Any = None, restorer: Restorer | None = None) -> Restorer:
    """``restorer`` if given (checked), else the restorer of ``embedding`` (:meth:`Restorer.for_embedding`)."""
    if restorer is not None:
        if not isinstance(restorer, Restorer):
            raise InvalidTypeError("restorer", "a Restorer", restorer)
        return restorer
    if embedding is None:
        raise InvalidParameterError("embedding", "the keyed PrivateEmbedding of the store (or restorer=...)", None)
    return Restorer.for_embedding(embedding)

