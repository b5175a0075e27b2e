"""A street's house number is part of the street's span ("42 Baker Street", "Hauptstraße 5")."""

from __future__ import annotations

import re

from ..spans import Span
from .base import Rule, RuleContext

__all__ = ["HouseNumbers", "street_shaped"]

_TYPES = frozenset(["street", "st", "road", "rd", "avenue", "ave", "lane", "ln", "drive", "dr", "way", "close",
                    "crescent", "terrace", "place", "pl", "court", "ct", "boulevard", "blvd", "square", "sq", "row",
                    "gardens", "grove", "mews", "parade", "walk", "highway", "hwy", "parkway", "wynd", "gate"])
_SUFFIXES = ("straße", "strasse", "str.", "gasse", "weg", "platz", "allee", "ring", "damm", "ufer", "straat", "laan",
             "plein", "gracht", "gatan", "gata", "vägen", "vej", "gade", "veien", "vei", "katu", "tie", "utca", "ulica")
_TYPE_FIRST = frozenset(["rue", "rua", "via", "viale", "calle", "avenida", "avda.", "av.", "carrer", "strada", "piazza",
                         "corso", "ul.", "ulica", "plac", "aleja", "avenue", "boulevard", "chemin", "allée", "place"])
_NUMBER_BEFORE = re.compile(r"(?<![\w.,/-])\d{1,5}[a-zA-Z]?[ \t]+$")
_NUMBER_AFTER = re.compile(r"[ \t]*,?[ \t]*(?!(?:18|19|20)\d\d\b)\d{1,4}[a-zA-Z]?(?![\w.,/-]?\d)\b")
_ADDRESS_CUE = re.compile(r"(?:\b(?:at|on|to|in|address(?:e)?|lives?|living)[ \t:]*|^|\n)[ \t]*\d{1,5}[a-zA-Z]?[ \t]+$",
                          re.IGNORECASE)
_AFTER_PLACE = re.compile(r"[ \t]*(?:[,;.\n]|$)")


def street_shaped(value: str) -> str | None:
    """How a place span's text names a street, or None: ``"type last"`` (its last word a street
    type: "Baker Street", "elm st"), ``"continental"`` (a street compound, "Hauptstraße",
    "Bahnhofstr.", "Søndergade", "Puruntie", or a first word that opens a street name, "Rue de
    Rivoli", "Via Roma", "ul. Narewska": the house number follows)."""
    words = value.split()
    if not words:
        return None
    last, first = words[-1].casefold().rstrip(",;"), words[0].casefold()
    if last.endswith(_SUFFIXES) or (len(words) >= 2 and first in _TYPE_FIRST):
        return "continental"
    return "type last" if last.rstrip(".") in _TYPES else None


class HouseNumbers(Rule):
    """A place span that names a street (:func:`street_shaped`) takes the house number written
    right before it ("42 Baker Street", "221b baker street") or, for a continental street name,
    after it ("Hauptstraße 5", "Via Roma 12"; not a year: "Bahnhofstraße 1996"); any
    other place takes a number right before it after an address cue, when the place ends the
    phrase ("lives at 12 Kirkgate, Otley"). A house number left beside a placeholder ("42
    <LOCATION>") still locates the person. Row ``house-numbers`` of
    ``benchmarks/text_rules.py``."""

    name = "house-numbers"
    stage = "document"
    summary = "a street's house number is part of the street's span"

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        return [_numbered(text, s) if s.label == "LOCATION" else s for s in spans]


def _numbered(text: str, s: Span) -> Span:
    start, end = s.start, s.end
    before = _NUMBER_BEFORE.search(text, max(0, start - 12), start)
    shape = street_shaped(text[start:end])
    if shape is not None:
        after = _NUMBER_AFTER.match(text, end) if shape == "continental" else None
        start = before.start() if before else start
        end = after.end() if after and not before else end
    elif before and _ADDRESS_CUE.search(text, max(0, start - 40), start) and _AFTER_PLACE.match(text, end):
        start = before.start()
    return s if (start, end) == (s.start, s.end) else Span(start, end, s.label, s.score, s.detector)
