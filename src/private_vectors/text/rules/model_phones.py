"""A phone number a model found must be one: seven digits or more, possible in a numbering plan."""

from __future__ import annotations

import re

from ..recognizers.numbers import phone_evidence, phone_ok
from ..recognizers.regex import in_code
from ..spans import Span
from ..traits import PRECISE, has
from .base import Rule, RuleContext

__all__ = ["ModelPhones", "refusal"]

_DECIMAL = re.compile(r"(?<![\d.])\d\.\d+(?![\d.])")  # "0.89": an odds ratio or a score, not a phone


class ModelPhones(Rule):
    """A phone number from a recognizer other than the project's regexes (which validate their
    own) is dropped when it has fewer than seven digits ("1683"), holds a decimal ("0.89-1.26"),
    is joined to a longer code by a hyphen or slash (:func:`~private_vectors.text.recognizers.regex.in_code`)
    or is no possible number (:func:`~private_vectors.text.recognizers.regex.phone_ok`), and, since
    version 2, when nothing says it is a phone number
    (:func:`~private_vectors.text.recognizers.numbers.phone_evidence`: a phone word beside it, a
    writing convention of phone numbers, or the grouping of its numbering plan), so that the scores
    of a results table ("3 1 0 6 1 10", "6-3 6-4 7-5") are no phones.
    Rows ``model-phones`` of ``benchmarks/text_rules.py``."""

    name = "model-phones"
    version = "2"
    stage = "document"
    summary = "a phone number a model found is validated like the regexes' own"

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        kept = []
        for s in spans:
            if s.label != "PHONE_NUMBER" or has(s, PRECISE):
                kept.append(s)
                continue
            why_not, why = refusal(text, s.start, s.end)
            if why_not is None:
                kept.append(s)
                context.note(self.name, "kept", s, f"a phone number: {why}")
            else:
                context.note(self.name, "dropped", s, f"no phone number: {why_not}")
        return kept


def refusal(text: str, start: int, end: int) -> tuple[str | None, str | None]:
    """``(why text[start:end] is no phone number, None)``, or ``(None, the evidence that it is one)``:
    the first failed test of :class:`ModelPhones`, in its order, or what
    :func:`~private_vectors.text.recognizers.numbers.phone_evidence` found."""
    value = text[start:end]
    if sum(c.isdigit() for c in value) < 7:
        return "fewer than seven digits", None
    if _DECIMAL.search(value):
        return "it holds a decimal", None
    if not phone_ok(value):
        return "no possible number of a numbering plan, or a run of years", None
    if in_code(text, start, end):
        return "joined to a longer code", None
    evidence = phone_evidence(text, start, end)
    if evidence is None:
        return "no phone word beside it, no writing convention of phones, not grouped as its plan writes it", None
    return None, evidence
