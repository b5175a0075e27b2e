"""The user's filters: the labels to act on and the score each label needs."""

from __future__ import annotations

from ..spans import Span
from .base import Rule, RuleContext

__all__ = ["Entities", "ScoreThreshold"]


class ScoreThreshold(Rule):
    """A span scored below its label's threshold (``thresholds``, else ``score_threshold``) is
    dropped, and so is an empty one.
    Row ``score-threshold`` of ``benchmarks/text_rules.py``."""

    name = "score-threshold"
    summary = "a span scored below its label's threshold is dropped"

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        settings = context.settings
        return [s for s in spans if s.score >= settings.threshold(s.label) and s.end > s.start]


class Entities(Rule):
    """Only spans of the labels the user chose (``entities``) are kept; all when none were chosen.
    Row ``entities`` of ``benchmarks/text_rules.py``."""

    name = "entities"
    summary = "a span of a label the user did not choose is kept as it is"

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        wanted = context.settings.entities
        return spans if wanted is None else [s for s in spans if s.label in wanted]
