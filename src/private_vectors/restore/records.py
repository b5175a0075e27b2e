"""What a restore record holds: the replaced spans of one document, in stored-text offsets, and
the configuration digest the record is bound to."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import Described, InvalidParameterError, InvalidTypeError, PrivateVectorsError
from ..keys import canonical_context

RESTORE_KEY = "pv_restore"
"""Metadata key of a document's restore record (Chroma metadata, LlamaIndex node metadata)."""
RESTORE_NOTE = ("a keyed text stage stores, per document, an encrypted restore record (AES-256-GCM under a "
                "subkey of the key): without the key it shows only a size class (256, 512, 1024… bytes) and "
                "nothing the stored surrogate text does not already show; with the key it gives back every "
                "replaced value")
"""One line for privacy reports: what the restore records reveal without the key, and with it."""
ESCAPE_LABEL = "ESCAPE"
"""Label of a restore entry that undoes the text stage's escaping of input that looked like a
placeholder (``<PERSON>`` in the input is stored as ``‹PERSON›``); never used in answers."""
_PLACEHOLDER_LIKE = re.compile(r"<([A-Z][A-Z0-9_]*)>")


class RestoreError(PrivateVectorsError, ValueError):
    """A restore record cannot be opened or does not fit its document; nothing was restored."""


@dataclass(frozen=True, repr=False)
class Replacement:
    """One replaced span of a stored document.

    Attributes:
        start: offset of the written value in the stored text.
        end: end offset of the written value in the stored text.
        label: the span's label (``PERSON``, ``EMAIL_ADDRESS``…; ``ESCAPE`` for escaped input).
        written: the surrogate or placeholder the stored text holds there.
        original: the value it replaced (a secret: never in a repr).
    """

    start: int
    end: int
    label: str
    written: str
    original: str

    def __repr__(self) -> str:
        return f"Replacement({self.start}, {self.end}, {self.label!r}, written={self.written!r}, original=<hidden>)"


@dataclass(frozen=True, repr=False)
class RestoreData:
    """The opened restore record of one document (holds original values: keep it in memory only)."""

    doc_id: str
    text_sha256: str
    replacements: tuple[Replacement, ...] = field(default_factory=tuple)

    def __repr__(self) -> str:
        return f"RestoreData(doc_id={self.doc_id!r}, replacements={len(self.replacements)}, <originals hidden>)"

    def __reduce__(self) -> Any:
        raise TypeError("RestoreData holds original values and is never pickled")

    def apply(self, text: str) -> str:
        """``text`` (the stored document) with every recorded replacement undone at its offsets.

        Raises:
            RestoreError: ``text`` is not the text the record was made for.
        """
        if not isinstance(text, str):
            raise InvalidTypeError("text", "the stored document text (str)", Described(f"<{type(text).__name__}>"))
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != self.text_sha256:
            raise RestoreError(f"document {self.doc_id!r}: its text is not the text its restore record was made for "
                               "(edited, truncated or another document's); nothing was restored")
        out, pos = [], 0
        for r in sorted(self.replacements, key=lambda r: r.start):
            if r.start < pos or text[r.start:r.end] != r.written:  # pragma: no cover - guarded by the digest
                raise RestoreError(f"document {self.doc_id!r}: a recorded span does not match its text")
            out += [text[pos:r.start], r.original]
            pos = r.end
        out.append(text[pos:])
        return "".join(out)


def _record_entries(raw: str, stored: str, log: Sequence[tuple[int, int, str, str]]) -> list[Replacement]:
    """Replacements in stored-text offsets from the Sanitizer's log (input offsets), plus an
    ``ESCAPE`` entry per bracket of placeholder-like input the text stage escaped (``<`` stored
    as ``‹``) outside a replaced span."""
    spans = sorted(log)
    events = [(s, e, label, written, raw[s:e]) for s, e, label, written in spans]
    for m in _PLACEHOLDER_LIKE.finditer(raw):  # "<" and ">" were stored as "‹" and "›"
        for at, was, now in ((m.start(), "<", "‹"), (m.end() - 1, ">", "›")):
            if not any(s <= at < e for s, e, *_ in spans):
                events.append((at, at + 1, ESCAPE_LABEL, now, was))
    out, shift = [], 0
    for s, e, label, written, original in sorted(events):
        start = s + shift
        out.append(Replacement(start, start + len(written), label, written, original))
        shift += len(written) - (e - s)
    if any(stored[r.start:r.end] != r.written for r in out):
        raise RestoreError("the text stage's output does not match its recorded replacements; no restore "
                           "data was made (nothing was stored)")
    return out


def config_digest(config: Mapping[str, Any]) -> str:
    """The configuration digest a restore record is bound to: SHA-256 of the fields that decide
    what the stored text means (encoder model, key derivation and key check value, the text
    stage's policy and per-label operators). Fields a reopen may legitimately change (library
    version, timeouts, detectors) are left out, so a library upgrade keeps records valid."""
    if not isinstance(config, Mapping):
        raise InvalidTypeError("config", "a PrivateEmbedding or Sanitizer config (dict)", config)
    san = config.get("sanitizer") if config.get("type") != "sanitizer" else config
    san = san if isinstance(san, Mapping) else {}
    enc = config.get("encoder") if isinstance(config.get("encoder"), Mapping) else {}
    view = {
        "model_id": enc.get("model_id"),
        "key_derivation": config.get("key_derivation"),
        "key_check": config.get("key_check", config.get("key_id")),
        "policy": san.get("policy"),
        "operators": dict(san.get("operators") or {}),
    }
    return hashlib.sha256(canonical_context(view)).hexdigest()



def _doc_id(doc_id: Any) -> str:
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or doc_id == "":
        raise InvalidTypeError("doc_id", "the document's id in its store (a non-empty str or an int)", doc_id)
    return str(doc_id)


def paired_ids(ids: Sequence[Any], items: Sequence[str]) -> list[Any]:
    """``ids`` as a list, one per document of ``items``."""
    ids = list(ids)
    if len(ids) != len(items):
        raise InvalidParameterError("ids", f"{len(items)} ids (one per document)", Described(f"{len(ids)} ids"))
    return ids
