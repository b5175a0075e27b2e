"""Recognizers: what finds spans. One concern per file; each a name, labels, a version, ``spans()``.

    regex        RegexDetector: e-mail, phone, card, IBAN, SSN, IP, URL, dates, streets, name cues
    identifiers  IdentifierDetector: handles, ID and reference numbers, dates of birth, ages, postcodes,
                 institutions, money, occupations
    presidio     PresidioDetector: presidio-analyzer + spaCy small English, offline and verified
    names        NameDetector: names from the shipped name pool and by shape
    places       PlaceDetector: cities and countries, streets, places after a cue
    firms        FirmDetector: firm names made of surnames
    wordlist     WordListDetector: the fallback without presidio
    concept      TokenDetector, PatternDetector, NerDetector, QuantityDetector: user and built-in concepts
    tagger       TaggerRecognizer: the learned, case-blind tagger (or a user's Hugging Face model)

:data:`BUILTIN_KINDS` maps a config's ``"type"`` to its class (imported on first use).
"""

from __future__ import annotations

from importlib import import_module

from .base import Recognizer

__all__ = ["BUILTIN_KINDS", "Recognizer", "builtin_kind"]

BUILTIN_KINDS: dict[str, str] = {
    "regex": "regex:RegexDetector", "identifiers": "identifiers:IdentifierDetector",
    "presidio": "presidio:PresidioDetector", "names": "names:NameDetector", "places": "places:PlaceDetector",
    "firms": "firms:FirmDetector", "wordlist": "wordlist:WordListDetector", "tokens": "concept:TokenDetector",
    "pattern": "concept:PatternDetector", "ner": "concept:NerDetector", "quantity": "concept:QuantityDetector",
    "tagger": "tagger:TaggerRecognizer",
}
"""Built-in recognizer kinds: config ``"type"`` -> ``module:Class`` of this package."""


def builtin_kind(kind: str) -> type[Recognizer] | None:
    """The class of a built-in recognizer kind, or None."""
    where = BUILTIN_KINDS.get(kind)
    if where is None:
        return None
    module, name = where.split(":")
    return getattr(import_module(f"{__name__}.{module}"), name)
