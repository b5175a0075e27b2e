"""A bare domain that a letter or digit continues is part of a longer token, not a URL."""

from __future__ import annotations

from ..spans import Span
from .base import Rule, RuleContext

__all__ = ["WholeDomains"]


class WholeDomains(Rule):
    """A bare domain a model found (no scheme, no "www.", no path) that a letter or digit
    continues is dropped: "IL28B.rs12979860" is a gene variant, not the domain "IL28B.rs"."""

    name = "whole-domains"
    stage = "document"
    summary = "a bare domain a letter continues is part of a longer token, not a URL"

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        def cut(s: Span) -> bool:
            value = text[s.start:s.end]
            bare = "://" not in value and not value.casefold().startswith("www.") and "/" not in value
            return bare and s.end < len(text) and text[s.end].isalnum()

        return [s for s in spans if s.label != "URL" or s.detector == "regex" or not cut(s)]
