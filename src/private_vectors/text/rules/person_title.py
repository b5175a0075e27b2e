"""A person's span takes the form of address right before it ("Mr Karl Strobel")."""

from __future__ import annotations

import re

from ..spans import Span
from ..vocabulary import HONORIFIC
from .base import Rule, RuleContext

__all__ = ["TITLE_BEFORE", "PersonTitle"]

TITLE_BEFORE = re.compile(rf"\b{HONORIFIC}\.?[ \t]+$")
"""A form of address ending right before a position (search up to 8 characters back)."""


class PersonTitle(Rule):
    """PERSON spans are extended over a form of address right before them ("Mr Karl Strobel"):
    the title is part of the mention and tells the person's gender.
    Row ``person-title`` of ``benchmarks/text_rules.py``."""

    name = "person-title"
    stage = "detection"
    summary = "a person's span takes the form of address before it"

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        out = []
        for s in spans:
            m = TITLE_BEFORE.search(text, max(0, s.start - 8), s.start) if s.label == "PERSON" else None
            out.append(Span(m.start(), s.end, s.label, s.score, s.detector) if m else s)
        return out
