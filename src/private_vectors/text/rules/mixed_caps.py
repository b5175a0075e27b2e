"""A lone model guess mixing words in capitals with other words is a heading, not a name."""

from __future__ import annotations

from ..shapes import mixed_caps
from ..spans import Span
from ..tags import as_words
from .base import MODEL_LABELS, PATTERN_RECOGNIZERS, Rule, RuleContext, alone

__all__ = ["MixedCaps"]


def _guesses_kept(text: str, spans: list[Span], shaped: object) -> list[Span]:
    """Spans that are no lone model guess, or whose text (a hashtag or handle: its words) ``shaped`` accepts."""
    return [s for s in spans if s.label not in MODEL_LABELS or s.detector in PATTERN_RECOGNIZERS
            or not alone(s, spans) or shaped(as_words(text, s.start, s.end))]  # type: ignore[operator]


class MixedCaps(Rule):
    """A lone model guess mixing words in capitals with other words ("CONCLUSION Lobular", "Type
    III IFN") is a heading or an acronym beside a word, not a name
    (:func:`~private_vectors.text.shapes.mixed_caps`); tested on the original text (detection
    title-cases words in capitals). Evidence: ``benchmarks/results/text/rules.md``, row
    ``mixed-caps``."""

    name = "mixed-caps"
    stage = "document"
    summary = "a lone model guess mixing words in capitals with other words is a heading, not a name"

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        return _guesses_kept(text, spans, lambda value: not mixed_caps(value))
