"""Spans, the detector protocol, merging overlapping spans and chunked detection.

A detector finds spans; an operator (``operators.py``) decides what replaces them. This is
the split presidio makes between recognizers and anonymizer operators.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from .._spans import Span, validate_texts
from ..errors import InvalidParameterError, InvalidTypeError

__all__ = ["LABELS", "Detector", "Span", "check_labels", "chunk_text", "merge_spans", "validate_texts"]

LABELS: tuple[str, ...] = (
    "PERSON", "LOCATION", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN",
    "IP_ADDRESS", "DATE_TIME", "NRP", "MEDICAL", "DEMOGRAPHIC", "URL", "ORGANIZATION",
)
"""The label vocabulary (presidio's names where they exist). User concepts may add their own."""


@runtime_checkable
class Detector(Protocol):
    """Finds spans in a batch of texts. ``get_config()`` is JSON-safe and names versions."""

    name: str

    def spans(self, texts: Sequence[str]) -> list[list[Span]]: ...

    def get_config(self) -> dict[str, Any]: ...


def check_labels(entities: Any, allowed: Sequence[str], default: tuple[str, ...], *,
                 what: str = "labels") -> tuple[str, ...]:
    """A detector's ``entities`` parameter: None gives ``default``; otherwise a list of names from
    ``allowed`` (a bare string, or an unknown name, is a clear error naming ``entities``)."""
    if entities is None:
        return default
    if isinstance(entities, str):
        raise InvalidTypeError("entities", f"a list of {what}", entities)
    unknown = sorted(set(entities) - set(allowed))
    if unknown:
        raise InvalidParameterError("entities", f"{what} from {list(allowed)}", unknown)
    return tuple(entities)


def merge_spans(spans: Sequence[Span], priority: Callable[[Span], Any] | None = None) -> list[Span]:
    """Merge overlapping spans into their union, sorted by start.

    The union is what gets replaced, so no character any detector flagged survives. The merged
    span takes its label, score and detector from the member that ranks first by ``priority``
    (default: highest score, then the longest).
    """
    key = priority or (lambda s: (-s.score, -(s.end - s.start)))
    out: list[Span] = []
    group: list[Span] = []
    end = -1
    for s in sorted(spans, key=lambda s: (s.start, -s.end)):
        if group and s.start < end:
            group.append(s)
            end = max(end, s.end)
            continue
        if group:
            out.append(_union(group, end, key))
        group, end = [s], s.end
    if group:
        out.append(_union(group, end, key))
    return out


def _union(group: list[Span], end: int, key: Callable[[Span], Any]) -> Span:
    best = min(group, key=key)
    return Span(group[0].start, end, best.label, best.score, best.detector)


_BREAK = re.compile(r"\n\s*\n|[.!?]\s+|\n|\s")


def chunk_text(text: str, size: int, overlap: int) -> list[tuple[int, str]]:
    """Cut ``text`` into ``(offset, chunk)`` pieces of at most ``size`` characters.

    Cuts fall on a paragraph, sentence or word break where one exists in the last quarter
    of a piece; consecutive pieces overlap by ``overlap`` characters so an entity cut by one
    boundary is whole in the next piece. Offsets map chunk positions back to ``text``.
    """
    if size <= overlap:
        raise InvalidParameterError("chunk_size", f"an int > overlap ({overlap})", size)
    if len(text) <= size:
        return [(0, text)]
    pieces: list[tuple[int, str]] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            window = text[start + (3 * size) // 4:end]
            cut = None
            for m in _BREAK.finditer(window):
                cut = m.end()
            if cut is not None:
                end = start + (3 * size) // 4 + cut
        pieces.append((start, text[start:end]))
        if end >= len(text):
            break
        start = max(end - overlap, start + 1)
    return pieces
