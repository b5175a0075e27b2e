"""Input shaped like a placeholder is escaped before detection, and nothing inside it is replaced."""

from __future__ import annotations

import re

from ..overlap import TakenRanges
from ..spans import Span
from .base import Rule, RuleContext

__all__ = ["EscapedPlaceholders", "escape"]

_PLACEHOLDER_LIKE = re.compile(r"<([A-Z][A-Z0-9_]*)>")
_ESCAPED = re.compile(r"‹[A-Z][A-Z0-9_]*›")


def escape(text: str) -> str:
    """Input that already looks like a placeholder (``<PERSON>``) becomes ``‹PERSON›`` (same length),
    so a ``<LABEL>`` in the output always marks a replacement and is never re-detected."""
    return _PLACEHOLDER_LIKE.sub(lambda m: f"‹{m.group(1)}›", text)


class EscapedPlaceholders(Rule):
    """A span overlapping an escaped placeholder of a known label (``‹PERSON›``, written as
    ``<PERSON>`` in the input) is dropped: the output's ``<LABEL>`` marks only replacements.
    A placeholder-shaped name (``<AMELIA_OKAFOR>``) is no label and stays detectable.
    Row ``escaped-placeholders`` of ``benchmarks/text_rules.py``."""

    name = "escaped-placeholders"
    summary = "nothing inside an escaped placeholder is replaced"

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        known, entities = context.settings.known_labels, context.settings.entities or ()
        guarded = [(m.start(), m.end()) for m in _ESCAPED.finditer(text)
                   if m.group(0)[1:-1] in known or m.group(0)[1:-1] in entities]
        if not guarded:
            return spans
        taken = TakenRanges()
        for a, b in guarded:  # matches of one pattern: no two overlap
            taken.add(a, b)
        return [s for s in spans if not taken.overlaps(s.start, s.end)]
