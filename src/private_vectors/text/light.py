"""A small, dependency-light PII detector for labelling data: regexes plus word lists, one text at a time.

Used to relabel "plain" training sentences that in fact contain PII (TextCrafter's PII
classifier, Tang et al. eqs. 5–8) and to label synthetic data. It is a heuristic, not a
guarantee: structured identifiers (e-mail, phone, credit card with Luhn check, US SSN, IBAN
with mod-97 check, IP address, URL/domain, dates, street addresses) come from
:mod:`~private_vectors.text.recognizers.regex`; person names and places from the word lists of
:mod:`~private_vectors.text.wordlist` and the name cues. With ``use_presidio=True``
presidio-analyzer's findings are added. The text stage proper is the
:class:`~private_vectors.text.sanitizer.Sanitizer`.

Labels are the text stage's (presidio's names): EMAIL_ADDRESS, PHONE_NUMBER, CREDIT_CARD,
US_SSN, IBAN_CODE, IP_ADDRESS, URL, DATE_TIME, PERSON, LOCATION (a street address is a
LOCATION); overlapping spans merge as in the text stage (:func:`~private_vectors.text.spans.merge_spans`).
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidParameterError, InvalidTypeError, require
from .recognizers.regex import _STREET, _STREET_EU, cue_name_spans, structured_matches
from .scores import PATTERN_SCORES, SCORES, score_param
from .spans import Span, merge_spans
from .wordlist import COMMON_CAPITALISED, name_spans

__all__ = ["LIGHT_LABELS", "LightDetector", "contains_pii", "detect_pii"]

LIGHT_LABELS = (
    "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE", "IP_ADDRESS",
    "URL", "DATE_TIME", "PERSON", "LOCATION",
)
"""The labels :class:`LightDetector` reports."""


class LightDetector:
    """Find PII spans in one text with regexes and word lists (optionally presidio as well).

    Args:
        entities: the labels to report (default: all of :data:`LIGHT_LABELS`).
        min_score: drop findings scored below this (0–1).
        use_presidio: also run presidio-analyzer (must be installed, with a spaCy model).
    """

    def __init__(self, *, entities: Any = None, min_score: float = SCORES.light, use_presidio: bool = False) -> None:
        self.entities = _check_entities(entities)
        self.min_score = score_param("min_score", min_score)
        self.use_presidio = bool(use_presidio)
        self._presidio: Any = _presidio_engine() if self.use_presidio else None

    def __repr__(self) -> str:
        return (f"LightDetector(entities={len(self.entities)} types, min_score={self.min_score}, "
                f"use_presidio={self.use_presidio})")

    def detect(self, text: str) -> list[Span]:
        """All spans in ``text``, sorted by position, overlapping ones merged (the text stage's rule)."""
        if not isinstance(text, str):
            raise InvalidTypeError("text", "a str", text)
        spans = _regex_spans(text) + name_spans(text) + _cue_spans(text)
        if self._presidio is not None:
            for r in self._presidio.analyze(text=text, language="en"):
                label = "LOCATION" if r.entity_type in ("GPE", "LOCATION") else r.entity_type
                spans.append(Span(r.start, r.end, label, float(r.score), "presidio"))
        spans = [s for s in spans if s.label in self.entities and s.score >= self.min_score]
        return merge_spans(spans)

    def contains_pii(self, text: str) -> bool:
        """Whether ``text`` has at least one span."""
        return bool(self.detect(text))

    def entity_types(self, text: str) -> set[str]:
        """The set of labels present in ``text``."""
        return {s.label for s in self.detect(text)}

    def redact(self, text: str, *, placeholder: str = "<{entity_type}>") -> str:
        """``text`` with each span replaced by ``placeholder`` (formatted with the label as ``entity_type``)."""
        out, pos = [], 0
        for s in self.detect(text):
            out.append(text[pos:s.start])
            out.append(placeholder.format(entity_type=s.label))
            pos = s.end
        out.append(text[pos:])
        return "".join(out)


def _check_entities(entities: Any) -> tuple[str, ...]:
    if entities is None:
        return LIGHT_LABELS
    if isinstance(entities, str):
        raise InvalidTypeError("entities", "a list of entity type names", entities)
    unknown = sorted(set(entities) - set(LIGHT_LABELS))
    if unknown:
        raise InvalidParameterError("entities", f"names from {list(LIGHT_LABELS)}", unknown)
    return tuple(entities)


def _presidio_engine() -> Any:
    return require("presidio_analyzer", "use_presidio=True needs presidio-analyzer and a spaCy English "
                   "model: pip install presidio-analyzer").AnalyzerEngine()


def _regex_spans(text: str) -> list[Span]:
    found = [Span(m.start(), m.end(), label, score, "regex") for label, m, score in structured_matches(text)]
    streets = PATTERN_SCORES["regex"]
    for pattern, score in ((_STREET, streets["street"]), (_STREET_EU, streets["street_eu"])):
        found += [Span(m.start(), m.end(), "LOCATION", score, "regex") for m in pattern.finditer(text)]
    return found


def _cue_spans(text: str) -> list[Span]:
    """The name-cue spans whose first word is no common capitalised word ("Named Hope" is not a name)."""
    return [s for s in cue_name_spans(text, detector="wordlist")
            if text[s.start:s.end].split()[0] not in COMMON_CAPITALISED]


_DEFAULT: LightDetector | None = None


def _default() -> LightDetector:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = LightDetector()
    return _DEFAULT


def detect_pii(text: str) -> list[Span]:
    """Spans in ``text`` with the default :class:`LightDetector`."""
    return _default().detect(text)


def contains_pii(text: str) -> bool:
    """Whether ``text`` contains PII according to the default :class:`LightDetector`."""
    return _default().contains_pii(text)
