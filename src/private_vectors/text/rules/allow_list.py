"""What the user listed as never to be replaced stays."""

from __future__ import annotations

from ..spans import Span
from .base import Rule, RuleContext

__all__ = ["AllowList"]


def allow_key(value: str) -> str:
    """How allow-list entries and span texts compare: casefolded, blanks collapsed."""
    return " ".join(value.casefold().split())


class AllowList(Rule):
    """A merged span whose text is on the allow list (compared casefolded, blanks collapsed) is kept
    as it is ("Acme Corp", the company's own name).
    Row ``allow-list`` of ``benchmarks/text_rules.py``."""

    name = "allow-list"
    stage = "merged"
    summary = "a span whose text is on the allow list is kept as it is"

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        allow = context.settings.allow
        if not allow:
            return spans
        return [s for s in spans if allow_key(text[s.start:s.end]) not in allow]
