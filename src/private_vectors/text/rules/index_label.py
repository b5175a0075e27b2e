"""A span takes the label its entity had when it was first replaced (the keyed entity index)."""

from __future__ import annotations

from ..spans import Span
from .base import Rule, RuleContext

__all__ = ["IndexLabel"]


class IndexLabel(Rule):
    """A span takes the label the keyed entity index holds for its text (a name replaced as PERSON
    stays PERSON where a model calls it a place), so its surrogate stays the same kind; a
    non-person span whose every word is indexed as a person's becomes PERSON. Regex spans keep
    their label. See :meth:`~private_vectors.text.entity_index.EntityIndex.relabel`.
    Row ``index-label`` of ``benchmarks/text_rules.py``."""

    name = "index-label"
    summary = "a span takes the label its entity had when first replaced"

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        if context.index is None or not context.view:
            return spans
        return [context.index.relabel(text, s, context.view) for s in spans]
