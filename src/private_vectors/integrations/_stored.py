"""What the protected store paths keep beside a vector: sanitized text and sanitized metadata.

Shared by the LangChain drop-ins and the LlamaIndex components. A string metadata value
(an author, a file name carrying a person's name, a subject line) is personal data as much as
the page text, so it goes through the same text stage; without a text stage it is stored as
given and the store says so once (a :class:`~private_vectors.errors.PrivacyWarning`).

A value made of joined words, such as a reader's ``file_path`` (``/data/tomas_berger.txt``), a
file name or a URL, hides its words from a detector that reads words; after the ordinary pass it
is read a second time with its separators (``_ - . / \\ :``) as spaces, and what that pass
replaces is replaced in the value at the same place (``/data/<PERSON>.txt``).
"""

from __future__ import annotations

import mimetypes
import re
import warnings
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..config import check_config_compatible, comparable_config
from ..embedding import PrivateEmbedding, rebuild
from ..errors import Described, InvalidParameterError, InvalidTypeError, PrivacyWarning
from ..keys import SecretKey, key_scope
from ..restore import RESTORE_KEY
from ..sealed.stores import require_key

__all__ = ["METADATA_MESSAGE", "METADATA_TEXT", "check_metadata_text", "check_metadatas", "check_unique_ids",
           "opened_metadata", "positions", "sanitize_metadatas", "sanitize_values", "stored_embedding", "warn_existing_ids"]

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


_JOINED = re.compile(r"[_/\\]|\.[A-Za-z0-9]{1,5}$")
"""A value whose words may be joined: a path, a file name, an identifier with underscores, a URL."""
_SEPARATORS = re.compile(r"(?<!\d)[_\-./\\:]|[_\-./\\:](?!\d)")
"""A separator, except between two digits (``2021-03-04`` stays a date, not digit groups)."""
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*>")
_EXTENSION = re.compile(r"(?<=\w)\.[A-Za-z][A-Za-z0-9]{0,4}$")


@lru_cache(maxsize=1)
def _file_extensions() -> frozenset[str]:
    """Registered file extensions: the standard library's own table (not the machine's files, so
    the same everywhere), with the Office Open XML and Markdown ones it lacks; "maria.smith" has none."""
    table = mimetypes.MimeTypes(filenames=())
    return frozenset(table.types_map[True]) | {".docx", ".xlsx", ".pptx", ".md"}


def _spaced(value: str) -> str:
    """``value`` with each separator a space (same length; placeholders such as ``<EMAIL_ADDRESS>``
    kept) and a file name's extension blank (``.txt``: no word of the name before it)."""
    if (ext := _EXTENSION.search(value)) is not None and ext.group().lower() in _file_extensions():
        value = value[:ext.start()] + " " * len(ext.group())
    kept = {m.start(): m.group() for m in _PLACEHOLDER.finditer(value)}
    out, i = [], 0
    for start, token in sorted(kept.items()):
        out.append(_SEPARATORS.sub(" ", value[i:start]))
        out.append(token)
        i = start + len(token)
    out.append(_SEPARATORS.sub(" ", value[i:]))
    return "".join(out)


def _joined_words(embedding: Any, values: list[str]) -> list[str]:
    """Second pass over path-like ``values`` (see the module): each read with its separators as
    spaces; what the text stage replaces there is replaced in the value at the same offsets."""
    spaced = [_spaced(v) for v in values]
    recorded = getattr(getattr(embedding, "sanitizer", None), "apply_recorded", None)
    if not callable(recorded):  # a custom text stage without offsets: the spaced form where it changed
        done = list(embedding.sanitize_documents(spaced))
        return [d if d != s else v for v, s, d in zip(values, spaced, done, strict=True)]
    _, logs = recorded(spaced)
    out = []
    for value, log in zip(values, logs, strict=True):
        for start, end, _label, written in sorted(log, reverse=True):
            value = value[:start] + written + value[end:]
        out.append(value)
    return out


def positions(indexes: Sequence[int], what: str) -> str:
    """'2 ids held, at positions 0 and 3 of the batch': ids named by where they are, never by
    their value (an id can be a name or an e-mail address)."""
    shown = [str(i) for i in indexes[:5]] + ([f"{len(indexes) - 5} more"] if len(indexes) > 5 else [])
    where = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
    return f"{len(indexes)} id(s) {what}, at position{'s' if len(indexes) > 1 else ''} {where} of the batch"


def check_unique_ids(ids: Sequence[Any], store: str) -> None:
    """Refuse a batch that repeats an id, naming where (``store`` refuses such a batch too).

    Raises:
        InvalidParameterError: an id occurs twice in ``ids``.
    """
    first: dict[Any, int] = {}
    repeated = [n for n, i in enumerate(ids) if first.setdefault(i, n) != n]
    if repeated:
        raise InvalidParameterError("ids", f"ids that occur once in the batch ({store} refuses a repeated id)",
                                    Described(positions(repeated, "repeated")))


def warn_existing_ids(existing: Sequence[Any], store: str, outcome: str, batch: Sequence[Any] = ()) -> None:
    """Say how many ids of ``batch`` were already in the store, where, and what the store did
    with them (UserWarning; positions, never the ids themselves)."""
    if not existing:
        return
    held = set(existing)
    where = positions([n for n, i in enumerate(batch) if i in held], "already in the " + store) if batch else (
        f"{len(existing)} id(s) already in the {store}")
    warnings.warn(f"{where}; {outcome}", UserWarning, stacklevel=3)


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
        raise InvalidTypeError("metadatas", "a list with one dict (or None) per document", Described("<a single dict>"))
    metas = list(metadatas or [])
    if len(metas) > count:
        raise InvalidParameterError("metadatas", f"at most {count} entries (one per document)", Described(f"{len(metas)} entries"))
    for m in metas:
        if m is not None and not isinstance(m, dict):
            raise InvalidTypeError("metadatas", "a dict (or None) per document", m)
    return metas + [None] * (count - len(metas))


def sanitize_metadatas(embedding: Any, metadatas: Sequence[Any] | None, count: int, *,
                       store_raw_text: bool = False, once: Any = None,
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
        once: the store, when it warns once that string values are kept without a text stage
            (its ``_metadata_warned`` flag); None: every call warns.

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
        if not getattr(once, "_metadata_warned", False):
            warnings.warn(METADATA_MESSAGE, PrivacyWarning, stacklevel=3)
        if once is not None:
            once._metadata_warned = True
        return metas
    cleaned = sanitize_values(embedding, strings)  # once for the batch, consumed in _strings order
    return [_replace(m, cleaned) for m in metas]


def sanitize_values(embedding: Any, values: Sequence[str]) -> list[str]:
    """String metadata ``values`` through ``embedding``'s text stage, path-like ones read a second
    time with their separators as spaces (see the module); blank values kept."""
    cleaned = list(values)
    todo = [i for i, s in enumerate(cleaned) if s.strip()]  # (an empty value carries nothing)
    done = list(embedding.sanitize_documents([cleaned[i] for i in todo])) if todo else []
    for i, value in zip(todo, done, strict=True):
        cleaned[i] = value
    joined = [i for i in todo if _JOINED.search(cleaned[i])]
    for i, value in zip(joined, _joined_words(embedding, [cleaned[i] for i in joined]) if joined else [],
                        strict=True):
        cleaned[i] = value
    return cleaned


def opened_metadata(payload: Any) -> dict[str, Any]:
    """An opened sealed record's metadata as an unsealed store keeps it (its restore record under
    ``pv_restore``)."""
    meta = dict(payload.metadata)
    if payload.restore is not None:
        meta[RESTORE_KEY] = payload.restore
    return meta


def stored_embedding(stored: dict[str, Any], where: str, given: Any = None, key: Any = None, *,
                     parameter: str = "embedding", seal: Any = None) -> PrivateEmbedding:
    """The PrivateEmbedding for a reopened store: the ``stored`` configuration rebuilt with ``key``
    (else ``PRIVATE_VECTORS_KEY``; both given and different: refused) and ``seal`` (e.g. a sealed
    store's keyring), or ``given`` checked against it (configuration and key) and bound to its key
    derivation. A key together with ``given`` is refused: the function has its own. A sealed
    store without a key (neither ``key``, ``given``'s nor the variable) is refused first, naming
    ``key`` (:func:`~private_vectors.sealed.stores.require_key`)."""
    keyed = isinstance(given, PrivateEmbedding) and given.pipeline.keying.keyed
    require_key(stored, where, given=key is not None or keyed)
    if given is None:
        try:
            secret = SecretKey.resolve(key, min_bytes=1)
        finally:
            del key
        with key_scope(secret):
            return rebuild(stored, where, use_cache=False, seal=seal)
    if key is not None:
        raise InvalidParameterError("key", f"no key together with {parameter} (the function has its own)", Described("<a key>"))
    if not isinstance(given, PrivateEmbedding):
        raise InvalidTypeError(parameter, "the PrivateEmbedding the store was written with (or None)", given)
    check_config_compatible(comparable_config(stored, given), given.get_config())
    given.pipeline.bind(stored, where)
    return given
