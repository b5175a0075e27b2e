"""Regular-expression detectors: fast and precise for structured identifiers.

E-mail, phone, credit card (Luhn-checked), IBAN (mod-97-checked), US SSN, IP address,
URL/domain, dates, street and military postal addresses (with their city/region/country/postcode
lines) and person names after a cue ("my name is", "Mr", "Dr", ...). The structured patterns are
``private_vectors.pii``'s, reused (the text room depends on ``pii``, never the reverse, so the
import graph has no cycle); the address tails, military addresses and name cues are added here.
Street addresses are labelled LOCATION.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..pii import (  # the project's regexes and checksums, reused as they are
    _STREET,
    _STREET_EU,
    structured_matches,
)
from .spans import Span, check_labels, validate_texts

__all__ = ["REGEX_LABELS", "RegexDetector"]

REGEX_VERSION = "2"

# military and multi-line postal addresses (tuned on the tuning half of synth_dataset_v2 only)
_MILITARY = re.compile(r"\b(?:PSC \d{3,5}, Box \d{3,5}|Unit \d{3,5},? Box \d{3,5}|US(?:NS|NV|S|CGC) [A-Z][\w'’-]+)"
                       r"\s*\n?\s*(?:APO|FPO|DPO) (?:AA|AE|AP) \d{5}\b", re.IGNORECASE)
_TAIL_WORD = r"(?:(?:Suite|Apt|Unit)\.?\s*\d+|[A-Z][\w'’.()-]*(?:[ \t]+(?:[A-Z(][\w'’.()-]*|\d{2,6}|de|la|del|di|du|van|von)){0,3}|nan|\d{2,6})"
_TAIL = re.compile(rf"(?:[ \t]*(?:\n[ \t]*,?|,)[ \t]*{_TAIL_WORD}(?:[ \t]+\d{{4,6}})?)+|(?:[ \t]+(?:Suite|Apt|Unit)\.?\s*\d+)+")
_NAME_CUE = re.compile(r"\b(?:[Mm]y name is|[Nn]amed|[Cc]alled|Mr\.?|Mrs\.?|Ms\.?|Dr\.?|Miss|Prof\.?)[ \t]+"
                       r"([A-Z][\w'’-]+(?:[ \t]+[A-Z]\.?)?(?:[ \t]+[A-Z][\w'’-]+)?)")
_CUE_STOP = frozenset(["The", "A", "An", "And", "But", "Or", "In", "On", "At", "To", "Of", "For", "By", "With", "From", "As", "Is", "It", "This", "That"])

REGEX_LABELS: tuple[str, ...] = (
    "PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS", "URL",
    "DATE_TIME", "LOCATION",
)
"""Labels the regex detector can emit (street addresses come out as LOCATION)."""

_DEFAULT_LABELS = tuple(x for x in REGEX_LABELS if x not in ("URL", "DATE_TIME"))


def _with_tail(text: str, start: int, end: int) -> tuple[int, int]:
    """Extend a street match over the following address lines (city, region code, country, postcode)."""
    m = _TAIL.match(text, end)
    return (start, m.end()) if m else (start, end)


def _find(text: str, wanted: frozenset[str]) -> list[Span]:
    found: list[Span] = []
    name = "regex"

    def add(label: str, m: re.Match[str], score: float) -> None:
        if label in wanted:
            found.append(Span(m.start(), m.end(), label, score, name))

    for label, m, score in structured_matches(text, dates_are_not_phones=True):
        add(label, m, score)
    if "LOCATION" in wanted:
        for pattern, score in ((_STREET, 0.8), (_STREET_EU, 0.6), (_MILITARY, 0.9)):
            for m in pattern.finditer(text):
                a, b = _with_tail(text, m.start(), m.end())
                found.append(Span(a, b, "LOCATION", score, name))
    if "PERSON" in wanted:
        for m in _NAME_CUE.finditer(text):
            if m.group(1).split()[0] not in _CUE_STOP:
                found.append(Span(m.start(1), m.end(1), "PERSON", 0.75, name))
    return found


class RegexDetector:
    """The project's regexes as a :class:`~private_vectors.text.spans.Detector`.

    Args:
        entities: labels to report, from :data:`REGEX_LABELS` (default: all but URL and
            DATE_TIME, which are common in ordinary text).
    """

    name = "regex"

    def __init__(self, *, entities: Sequence[str] | None = None) -> None:
        labels = check_labels(entities, REGEX_LABELS, _DEFAULT_LABELS)
        self.entities = labels
        self._wanted = frozenset(labels)

    def __repr__(self) -> str:
        return f"RegexDetector(entities={list(self.entities)})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """Spans per text (overlaps not resolved: the ensemble merges)."""
        return [_find(t, self._wanted) for t in validate_texts(texts)]

    def get_config(self) -> dict[str, Any]:
        return {"type": "regex", "version": REGEX_VERSION, "entities": list(self.entities)}
