"""Which spans of one document overlap a given span, without reading all of them.

The rules and the keyed entity index ask, span by span, which other spans of the document share
a character with it (:func:`~.shapes.overlaps`). Scanning every span for every span costs the
square of the spans a document holds: a long, name-dense document (200,000 characters, thousands
of spans) spent most of its time there. :class:`OverlapIndex` files each span under the blocks
of :data:`BLOCK` characters it touches, so a question reads only the spans near the span asked
about: time linear in the document's length. The answers are those of the scan, in the order of
the spans given.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from .spans import Span

__all__ = ["BLOCK", "OverlapIndex", "TakenRanges"]

BLOCK = 64
"""Characters per block: a span is filed under each block it touches."""


def _blocks(start: int, end: int) -> range:
    """The blocks holding the characters of ``start:end``; an empty span, its position's block
    (an empty span overlaps a span that holds characters on both sides of it)."""
    return range(start // BLOCK, max(start, end - 1) // BLOCK + 1)


class OverlapIndex:
    """The spans of one document filed by position.

    Args:
        spans: the document's spans (any order; the index keeps the objects given).
    """

    def __init__(self, spans: Sequence[Span]) -> None:
        self.spans = list(spans)
        self.checks = 0  # candidate spans compared so far (a test bounds it)
        self._blocks: dict[int, list[int]] = {}
        for i, s in enumerate(self.spans):
            for b in _blocks(s.start, s.end):
                self._blocks.setdefault(b, []).append(i)

    def positions(self, start: int, end: int) -> list[int]:
        """Indices (ascending) of the spans sharing a character with ``start:end``, the test of
        :func:`~.shapes.overlaps`: ``s.start < end and start < s.end``."""
        near: set[int] = set()
        for b in _blocks(start, end):
            near.update(self._blocks.get(b, ()))
        self.checks += len(near)
        return sorted(i for i in near if self.spans[i].start < end and start < self.spans[i].end)

    def overlapping(self, span: Span) -> list[Span]:
        """The spans sharing a character with ``span`` (``span`` itself among them when filed and
        not empty), in the order given."""
        return [self.spans[i] for i in self.positions(span.start, span.end)]


class TakenRanges:
    """Ranges ``start:end`` no two of which overlap (:func:`~.shapes.overlaps`; an empty range
    overlaps a range that holds characters on both sides of it), kept sorted: whether a new
    range overlaps one of them costs a binary search, not a scan of all of them."""

    def __init__(self) -> None:
        self._ranges: list[tuple[int, int]] = []

    def overlaps(self, start: int, end: int) -> bool:
        """Whether ``start:end`` overlaps a range taken: ``s < end and start < e`` for one of them.
        Sorted, the taken ranges' ends rise with their starts, so of the ranges starting before
        ``end`` the last one ends latest."""
        i = bisect.bisect_left(self._ranges, (end, -1))  # the ranges starting before ``end`` (ends are >= 0)
        return i > 0 and start < self._ranges[i - 1][1]

    def add(self, start: int, end: int) -> None:
        """Take ``start:end`` (which overlaps no range taken)."""
        bisect.insort(self._ranges, (start, end))
