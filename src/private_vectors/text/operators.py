"""Operators: what replaces a detected span (presidio's anonymizer operators, split from detectors).

* ``"redact"`` — a typed placeholder, ``<PERSON>``;
* ``"surrogate"`` — a keyed fake value of the same kind (:mod:`.surrogates`); labels without
  a surrogate kind are redacted;
* ``"keep"`` — the span stays as it is.
"""

from __future__ import annotations

from .spans import Span
from .surrogates import SurrogateGenerator

__all__ = ["POLICIES", "Keep", "Operator", "Redact", "Surrogate", "placeholder"]

POLICIES: tuple[str, ...] = ("redact", "surrogate", "keep")


def placeholder(label: str) -> str:
    """The typed placeholder of ``label``."""
    return f"<{label}>"


class Operator:
    """Base: ``replace(original, span) -> str``."""

    name = "operator"

    def replace(self, original: str, span: Span) -> str:  # pragma: no cover - interface
        raise NotImplementedError


class Redact(Operator):
    name = "redact"

    def replace(self, original: str, span: Span) -> str:
        return placeholder(span.label)


class Keep(Operator):
    name = "keep"

    def replace(self, original: str, span: Span) -> str:
        return original


class Surrogate(Operator):
    name = "surrogate"

    def __init__(self, generator: SurrogateGenerator) -> None:
        self.generator = generator

    def replace(self, original: str, span: Span) -> str:
        value = self.generator.surrogate(span.label, original)
        return placeholder(span.label) if value is None else value
