"""The text stage: detect concept spans, then redact them, replace them with keyed surrogates, or keep them.

Detectors (``spans(texts) -> list[list[Span]]``) are split from operators (redact /
surrogate / keep), as presidio splits recognizers from anonymizer operators.

    spans       Span, the Detector protocol, merging, chunking
    regex       RegexDetector (e-mail, phone, card, IBAN, SSN, IP, dates, streets)
    presidio    PresidioDetector (presidio-analyzer + spaCy small English, offline, verified)
    names       NameDetector, PlaceDetector, FirmDetector (vocabularies: the shipped multilingual name/city pool, countries)
    wordlist    name/place word lists, WordListDetector (fallback without presidio), query truecasing
    light       LightDetector: regexes + word lists, one text at a time (labelling data)
    concepts    TokenDetector, PatternDetector, NerDetector, TextConcept, built-in concept detectors
    surrogates  keyed surrogates from the shipped, versioned pool
    operators   Redact, Surrogate, Keep
    sanitizer   Sanitizer (documents, queries, LangChain document transformer)
"""

from importlib import import_module
from typing import Any

_HOMES = {
    "POLICIES": "operators", "DetectionError": "sanitizer", "Detector": "spans", "FirmDetector": "names",
    "LightDetector": "light", "NameDetector": "names", "NerDetector": "concepts", "PatternDetector": "concepts",
    "PlaceDetector": "names", "PresidioDetector": "presidio", "RegexDetector": "regex", "Sanitizer": "sanitizer",
    "Span": "spans", "SurrogateGenerator": "surrogates", "TextConcept": "concepts", "TokenDetector": "concepts",
    "WordListDetector": "wordlist", "concept_detectors": "concepts", "load_pool": "surrogates",
    "merge_spans": "spans", "presidio_available": "presidio",
}


def __getattr__(name: str) -> Any:
    """The package's names, imported on first use (the package itself loads no detector)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "POLICIES",
    "DetectionError",
    "Detector",
    "FirmDetector",
    "LightDetector",
    "NameDetector",
    "NerDetector",
    "PatternDetector",
    "PlaceDetector",
    "PresidioDetector",
    "RegexDetector",
    "Sanitizer",
    "Span",
    "SurrogateGenerator",
    "TextConcept",
    "TokenDetector",
    "WordListDetector",
    "concept_detectors",
    "load_pool",
    "merge_spans",
    "presidio_available",
]
