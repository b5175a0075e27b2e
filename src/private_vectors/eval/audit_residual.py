"""Identifiers left in what a store keeps readable: counted by type, values only on request.

presidio's default recognizers on spaCy (:class:`~private_vectors.eval.text_rows.PresidioAnchor`'s
analyzer, independent of the library's text stage) over every stored text: findings per entity
type; and the *raw values left*: presidio's findings in the raw documents that appear verbatim in
the text the store keeps for the same document.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["presidio_findings", "residual_pii"]

NOT_IDENTIFIERS = frozenset({"DATE_TIME", "LOCATION", "NRP", "URL", "ORGANIZATION", "AGE", "QUANTITY", "MONEY",
                             "DEMOGRAPHIC"})
"""presidio types that describe a person rather than point at one ("last weekend", "Madrid", "Dutch"):
counted and listed, but not in the headline's identifier count. Every other type (names, e-mail
addresses, phone numbers, card, account, passport and licence numbers, IP addresses, …) is an
identifier."""


def is_identifier(entity_type: str) -> bool:
    """Whether presidio's ``entity_type`` points at one person or account (see :data:`NOT_IDENTIFIERS`)."""
    return entity_type not in NOT_IDENTIFIERS


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


# --------------------------------------------------------------------------- residual PII
@functools.lru_cache(maxsize=1)
def _analyzer() -> Any:
    """presidio's batch analyzer on spaCy's small model, built once per process."""
    from presidio_analyzer import BatchAnalyzerEngine

    from .text_rows import PresidioAnchor

    analyzer, _ = PresidioAnchor()._engines()
    return BatchAnalyzerEngine(analyzer_engine=analyzer)


def presidio_findings(texts: Sequence[str], engine: Any = None) -> list[list[tuple[str, str]]]:
    """presidio's default findings per text as (entity type, value)."""
    engine = engine or _analyzer()
    texts = list(texts)
    results = engine.analyze_iterator(texts, language="en", batch_size=32)
    return [[(r.entity_type, t[r.start:r.end]) for r in res] for t, res in zip(texts, results, strict=True)]


def residual_pii(stored: Sequence[str | None], raw: Sequence[str] | None, *, show_values: bool = False
                 ) -> dict[str, Any]:
    """Residual-PII figures (see the module docstring) over ``stored`` texts (None = no text).

    Identifier counts (``identifiers``, ``raw_identifiers``, ``raw_identifiers_left``) take only
    the types :func:`is_identifier` accepts; the ``*_by_type`` counts take every type. With
    ``show_values``, the values found (``finding_values``) and the raw values left
    (``values_left_by_type``), at most 20 per type.
    """
    kept = [i for i, t in enumerate(stored) if t]
    out: dict[str, Any] = {"documents": len(stored), "documents_with_text": len(kept)}
    if not kept:
        out.update({"findings": 0, "findings_by_type": {}, "documents_with_findings": 0, "identifiers": 0})
        if raw is not None:
            out.update({"raw_values": None, "raw_values_left": 0, "raw_values_left_by_type": {},
                        "raw_identifiers": None, "raw_identifiers_left": 0, "raw_values_by_type": {}})
        return out
    engine = _analyzer()
    found = presidio_findings([stored[i] for i in kept], engine)
    by_type = Counter(e for f in found for e, _ in f)
    out.update({"findings": sum(by_type.values()), "findings_by_type": dict(sorted(by_type.items())),
                "documents_with_findings": sum(1 for f in found if f),
                "identifiers": sum(n for t, n in by_type.items() if is_identifier(t))})
    if show_values:
        out["finding_values"] = sorted({v for f in found for _, v in f})[:50]
    if raw is not None:
        raw_found = presidio_findings([raw[i] for i in kept], engine)
        present: Counter[str] = Counter()
        left: Counter[str] = Counter()
        values_left: dict[str, set[str]] = {}
        for i, f in zip(kept, raw_found, strict=True):
            for etype, value in dict.fromkeys(f):
                if len(value.strip()) < 2:
                    continue
                present[etype] += 1
                if value in (stored[i] or ""):
                    left[etype] += 1
                    values_left.setdefault(etype, set()).add(value)
        out.update({"raw_values": sum(present.values()), "raw_values_left": sum(left.values()),
                    "raw_values_by_type": dict(sorted(present.items())),
                    "raw_values_left_by_type": dict(sorted(left.items())),
                    "raw_identifiers": sum(n for t, n in present.items() if is_identifier(t)),
                    "raw_identifiers_left": sum(n for t, n in left.items() if is_identifier(t))})
        if show_values:
            out["values_left_by_type"] = {t: sorted(v)[:20] for t, v in sorted(values_left.items())}
    return out


def identifier_counts(residual: Mapping[str, Any]) -> tuple[int | None, dict[str, int]]:
    """(identifier values kept in the stored text, per identifier type): the raw values left when
    raw documents were compared, else presidio's findings in the stored text."""
    if residual.get("raw_values") is not None:
        by_type = residual.get("raw_values_left_by_type") or {}
        total = residual.get("raw_identifiers_left")
    elif residual.get("documents_with_text"):
        by_type, total = residual.get("findings_by_type") or {}, residual.get("identifiers")
    else:
        return 0, {}
    return total, {t: n for t, n in by_type.items() if is_identifier(t)}
