"""Which span wins where spans overlap: the one overlap rule of the text stage.

Overlapping spans merge into their union (:func:`~private_vectors.text.spans.merge_spans`), so
no character any recognizer flagged survives; the union takes its label from the span that
ranks first: the precise regexes (a street address that spaCy calls PERSON stays LOCATION), then
the keyed entity index (the label the entity had at ingest), then the higher score, then the
longer span.
"""

from __future__ import annotations

from collections.abc import Sequence

from .overlap import OverlapIndex
from .spans import Span, merge_spans
from .traits import KEYED_INDEX, PRECISE, has

__all__ = ["PRECEDENCE", "merge_document_spans", "precedence"]

PRECEDENCE: tuple[str, ...] = ("regex", "keyed-index", "score", "length")
"""The order in which overlapping spans give the merged span its label (recorded in the text
stage's configuration): spans of a ``"precise"`` recognizer (:mod:`.traits`: the regexes), then
of the keyed entity index, then the higher score, then the longer span."""


def precedence(s: Span) -> tuple[bool, bool, float, int]:
    """The rank of a span in a merge (lower wins), in the order of :data:`PRECEDENCE`."""
    return (not has(s, PRECISE), s.detector != KEYED_INDEX, -s.score, -(s.end - s.start))


def _credited(span: Span, detected: OverlapIndex) -> Span:
    """A merged span the keyed index won, credited to the first recognizer span (of
    ``detected``, in its order) that also found it: only spans no recognizer found keep the name
    ``"keyed-index"`` (they came from propagation)."""
    if span.detector != KEYED_INDEX:
        return span
    first = detected.positions(span.start, span.end)
    if first:
        return Span(span.start, span.end, span.label, span.score, detected.spans[first[0]].detector)
    return span


def merge_document_spans(kept: list[Span], extra: Sequence[Span] = ()) -> list[Span]:
    """The merged spans of one document: its selected spans and the keyed index's (``extra``)."""
    merged = merge_spans(kept + list(extra), priority=precedence)
    if extra:  # "keyed-index" names a span only the second pass found
        detected = OverlapIndex(kept)
        merged = [_credited(s, detected) for s in merged]
    return merged
