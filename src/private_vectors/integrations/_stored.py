"""What the protected store paths keep beside a vector: sanitized text and sanitized metadata.

Shared by the LangChain drop-ins and the LlamaIndex components. A string metadata value
(an author, a file name carrying a person's name, a subject line) is personal data as much as
the page text, so it goes through the same text stage; without a text stage it is stored as
given and the store says so once (a :class:`~private_vectors.errors.PrivacyWarning`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ..config import check_config_compatible, comparable_config
from ..embedding import PrivateEmbedding, rebuild
from ..errors import InvalidParameterError, InvalidTypeError, PrivacyWarning
from ..keys import SecretKey, key_scope

__all__ = ["METADATA_MESSAGE", "METADATA_TEXT", "check_metadata_text", "check_metadatas", "sanitize_metadatas",
           "stored_embedding"]

METADATA_TEXT = ("sanitize", "keep")
"""``metadata_text`` choices: string values through the text stage, or kept as given (for
metadata you know holds no personal data: ids, dates, categories)."""

METADATA_MESSAGE = (
    "string metadata values are stored as given: this PrivateEmbedding has no text stage (sanitize=None), so "
    "nothing removes personal data from metadata; build it with a text stage (e.g. concept='PII') or keep "
    "personal data out of metadata"
)


def _strings(value: Any, out: list[str]) -> None:
    """Collect the strings inside ``value`` (dicts, lists and tuples walked), in order."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _strings(v, out)


def _replace(value: Any, replacements: list[str]) -> Any:
    """``value`` with its strings replaced, in :func:`_strings` order (consumes ``replacements``)."""
    if isinstance(value, str):
        return replacements.pop(0)
    if isinstance(value, dict):
        return {k: _replace(v, replacements) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_replace(v, replacements) for v in value)
    return value


def check_metadata_text(value: Any) -> str:
    """``value`` if it is one of :data:`METADATA_TEXT`."""
    if not isinstance(value, str) or value not in METADATA_TEXT:
        raise InvalidParameterError("metadata_text", f"one of {list(METADATA_TEXT)}", value)
    return value


def check_metadatas(metadatas: Sequence[Any] | None, count: int) -> list[Any]:
    """``metadatas`` padded with None to ``count``; each a dict or None.

    Raises:
        InvalidTypeError: an entry that is not a dict or None.
        InvalidParameterError: more entries than documents.
    """
    if isinstance(metadatas, dict):
        raise InvalidTypeError("metadatas", "a list with one dict (or None) per document", "<a single dict>")
    metas = list(metadatas or [])
    if len(metas) > count:
        raise InvalidParameterError("metadatas", f"at most {count} entries (one per document)", f"{len(metas)} entries")
    for m in metas:
        if m is not None and not isinstance(m, dict):
            raise InvalidTypeError("metadatas", "a dict (or None) per document", m)
    return metas + [None] * (count - len(metas))


def sanitize_metadatas(embedding: Any, metadatas: Sequence[Any] | None, count: int, *,
                       store_raw_text: bool = False, warn: Callable[[], bool] | None = None,
                       metadata_text: str = "sanitize") -> list[Any]:
    """``metadatas`` (padded with None to ``count``) with every string value through the text stage.

    The stores call it *after* the documents' own pass through the text stage: the text stage
    learns the names it found in the documents and then also catches them in a metadata value
    standing alone, where a detector has no sentence context (measured in
    ``tests/test_every_path.py``: run first, metadata alone misses more names).

    Args:
        embedding: the PrivateEmbedding (its ``sanitize_documents``; None or no text stage: values kept).
        metadatas: one dict (or None) per document.
        count: the number of documents.
        store_raw_text: the store keeps raw text on purpose: metadata kept as given too.
        metadata_text: ``"sanitize"`` (default) or ``"keep"`` (values kept, no warning).
        warn: called when string values are kept without a text stage; returns whether to warn
            (a store warns once).

    Raises:
        InvalidTypeError: a metadata entry that is not a dict or None.
    """
    metas = check_metadatas(metadatas, count)
    strings: list[str] = []
    for m in metas:
        _strings(m, strings)
    if not strings or store_raw_text or metadata_text == "keep":
        return metas
    sanitizer = getattr(embedding, "sanitizer", None)
    if sanitizer is None:
        if warn is None or warn():
            warnings.warn(METADATA_MESSAGE, PrivacyWarning, stacklevel=3)
        return metas
    todo = [i for i, s in enumerate(strings) if s.strip()]  # (an empty value carries nothing)
    done = list(embedding.sanitize_documents([strings[i] for i in todo])) if todo else []
    cleaned = list(strings)
    for i, value in zip(todo, done, strict=True):
        cleaned[i] = value
    return [_replace(m, cleaned) for m in metas]


def stored_embedding(stored: dict[str, Any], where: str, given: Any = None, key: Any = None, *,
                     parameter: str = "embedding") -> PrivateEmbedding:
    """The PrivateEmbedding for a reopened store: the ``stored`` configuration rebuilt with ``key``
    (else ``PRIVATE_VECTORS_KEY``; both given and different: refused), or ``given`` checked against
    it (configuration and key) and bound to its key derivation. A key together with ``given`` is
    refused: the function has its own."""
    if given is None:
        try:
            secret = SecretKey.resolve(key, min_bytes=1)
        finally:
            del key
        with key_scope(secret):
            return rebuild(stored, where, use_cache=False)
    if key is not None:
        raise InvalidParameterError("key", f"no key together with {parameter} (the function has its own)", "<a key>")
    if not isinstance(given, PrivateEmbedding):
        raise InvalidTypeError(parameter, "the PrivateEmbedding the store was written with (or None)", given)
    check_config_compatible(comparable_config(stored, given), given.get_config())
    given.pipeline.bind(stored, where)
    return given
