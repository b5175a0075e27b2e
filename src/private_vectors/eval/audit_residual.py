"""Identifiers left in what a store keeps readable: counted by type, values only on request.

Counted with :class:`~private_vectors.eval.audit_detect.AuditDetector` (the library's recognizers
and learned tagger before their keep rules, and presidio with validated national IDs):

* **findings** in every stored text (document text and string metadata values): what someone
  reading the store finds (keyed surrogates look like names by design and are counted);
* with the raw documents, the **raw values left**: each distinct value found in a raw document
  that appears verbatim in what the store keeps of the same document (kept in full), or of which
  a word of three letters or more does (kept in part: "Ottoline" of "Ottoline Vanderpump");
  the values are those the detector finds in the raw document and those the store itself
  replaced in *another* document (the raw-versus-stored difference: a word run the store
  replaced by a placeholder, or by a surrogate the detector typed, somewhere) that occur in it.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .audit_detect import AuditDetector, Finding, is_identifier
from .datasets import NON_IDENTIFYING

__all__ = ["replaced_values", "residual_pii"]

def type_order(types: Any, concept: Any = "PII") -> list[str]:
    """``types`` with those ``concept``'s preset replaces first (in the preset's order), then the rest."""
    from ..text.presets import PRESETS

    names = [concept] if isinstance(concept, str) else list(concept or [])
    first: list[str] = []
    for name in names:
        preset = PRESETS.get(str(name)) or PRESETS.get(str(name).upper())
        first += [t for t in (preset.labels if preset else ()) if t not in first]
    present = list(dict.fromkeys(types))
    return [t for t in first if t in present] + sorted(t for t in present if t not in first)


# --------------------------------------------------------------------------- the raw-versus-stored difference
_TOKEN = re.compile(r"<[A-Z][A-Z0-9_]*>|\w+|[^\w\s]")
_PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9_]*)>")
_LETTER = re.compile(r"[^\W\d_]")


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _type_of(raw: str, start: int, end: int, stored_part: str, found: Sequence[Finding]) -> str | None:
    """The type of a replaced raw run: its placeholder's label, else the one type the detector gave it."""
    labels = _PLACEHOLDER.findall(stored_part)
    if len(labels) == 1 and stored_part.strip() == f"<{labels[0]}>":
        return labels[0]
    types = {f.type for f in found if f.start < end and start < f.end}
    return types.pop() if len(types) == 1 else None


def replaced_values(raw: Sequence[str], stored: Sequence[str | None], found: Sequence[Sequence[Finding]]
                    ) -> dict[str, str]:
    """{raw value: type} of every word run the store replaced (difflib's ``replace`` opcodes between the
    raw and the stored text of each document, on word tokens; placeholders one token each), for
    values with a letter and three characters or more (a number replaced once says nothing of another)."""
    out: dict[str, str] = {}
    for r, s, f in zip(raw, stored, found, strict=True):
        if not s:
            continue
        rt, st = _tokens(r), _tokens(s)
        ops = difflib.SequenceMatcher(None, [t for t, _, _ in rt], [t for t, _, _ in st], autojunk=False).get_opcodes()
        for tag, i1, i2, j1, j2 in ops:
            if tag != "replace":
                continue
            a, b = rt[i1][1], rt[i2 - 1][2]
            kind = _type_of(r, a, b, s[st[j1][1]:st[j2 - 1][2]], f)
            value = r[a:b].strip(" ,.;:")
            if kind and len(value) >= 3 and _LETTER.search(value):
                out.setdefault(value, kind)
    return out


def _occurs(text: str, value: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text) is not None


def _part_kept(value: str, stored: str) -> bool:
    """A word of ``value`` (3 characters or more, not a word that identifies nobody) is a word of ``stored``."""
    words = [w for w in re.findall(r"\w+", value) if len(w) >= 3 and w.lower() not in NON_IDENTIFYING]
    return len(words) > 1 and any(_occurs(stored, w) for w in words)


# --------------------------------------------------------------------------- the counts
def residual_pii(stored: Sequence[str | None], raw: Sequence[str] | None, *, show_values: bool = False,
                 detector: AuditDetector | None = None) -> dict[str, Any]:
    """Residual-identifier figures (see the module docstring) over ``stored`` texts (None = no text).

    Identifier counts (``identifiers``, ``raw_identifiers``, ``raw_identifiers_left``,
    ``raw_identifiers_left_in_part``) take only the types :func:`is_identifier` accepts; the
    ``*_by_type`` counts take every type. With ``show_values``, the values found
    (``finding_values``) and the raw values left (``values_left_by_type``), at most 20 per type.
    """
    detector = detector or AuditDetector()
    kept = [i for i, t in enumerate(stored) if t]
    out: dict[str, Any] = {"documents": len(stored), "documents_with_text": len(kept), "detectors": detector.describe()}
    found = detector.find([stored[i] for i in kept]) if kept else []
    by_type = Counter(f.type for fs in found for f in fs)
    out.update({"findings": sum(by_type.values()), "findings_by_type": dict(sorted(by_type.items())),
                "documents_with_findings": sum(1 for fs in found if fs),
                "identifiers": sum(n for t, n in by_type.items() if is_identifier(t))})
    if show_values:
        out["finding_values"] = sorted({f.value for fs in found for f in fs})[:50]
    if raw is not None:
        out.update(_raw_left([stored[i] or "" for i in kept], [raw[i] for i in kept], detector, show_values))
    return out


def _raw_left(stored: list[str], raw: list[str], detector: AuditDetector, show_values: bool) -> dict[str, Any]:
    """The raw values left (see the module docstring) over documents that keep text."""
    raw_found = detector.find(raw) if raw else []
    replaced = replaced_values(raw, stored, raw_found) if raw else {}
    present: Counter[str] = Counter()
    left: Counter[str] = Counter()
    part: Counter[str] = Counter()
    values_left: dict[str, set[str]] = {}
    from_diff = 0
    for s, r, fs in zip(stored, raw, raw_found, strict=True):
        values = {f.value: f.type for f in fs if len(f.value.strip()) >= 2}
        for v, t in replaced.items():
            if not any(v in known for known in values) and _occurs(r, v):
                values[v], from_diff = t, from_diff + 1
        for value, kind in values.items():
            present[kind] += 1
            if value in s:
                left[kind] += 1
                values_left.setdefault(kind, set()).add(value)
            elif _part_kept(value, s):
                part[kind] += 1
    out = {"raw_values": sum(present.values()), "raw_values_left": sum(left.values()),
           "raw_values_by_type": dict(sorted(present.items())), "raw_values_left_by_type": dict(sorted(left.items())),
           "raw_values_left_in_part_by_type": dict(sorted(part.items())), "raw_values_from_difference": from_diff,
           "raw_identifiers": sum(n for t, n in present.items() if is_identifier(t)),
           "raw_identifiers_left": sum(n for t, n in left.items() if is_identifier(t)),
           "raw_identifiers_left_in_part": sum(n for t, n in part.items() if is_identifier(t))}
    if show_values:
        out["values_left_by_type"] = {t: sorted(v)[:20] for t, v in sorted(values_left.items())}
    return out


def identifier_counts(residual: Mapping[str, Any]) -> tuple[int | None, dict[str, int]]:
    """(identifier values kept in the stored text, per identifier type): the raw values left when
    raw documents were compared, else the findings in the stored text."""
    if residual.get("raw_values") is not None:
        by_type = residual.get("raw_values_left_by_type") or {}
        total = residual.get("raw_identifiers_left")
    elif residual.get("documents_with_text"):
        by_type, total = residual.get("findings_by_type") or {}, residual.get("identifiers")
    else:
        return 0, {}
    return total, {t: n for t, n in by_type.items() if is_identifier(t)}
