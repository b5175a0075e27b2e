"""The text stage: detect concept spans, then redact them, replace them with keyed surrogates, or keep them.

Detectors (``spans(texts) -> list[list[Span]]``) are split from operators (redact /
surrogate / keep), as presidio splits recognizers from anonymizer operators.

    spans         Span, the Detector protocol, merging, chunking
    recognizers/  what finds spans, one concern per file (regex, identifiers, presidio, names, places,
                  firms, wordlist, concept)
    rules/        span rules: named objects that keep, drop, extend or relabel spans
    registry      recognizers and rules by name (a user's own recognizer is added here)
    vocabulary    calendar words, forms of address, particles, ages; the word sets from installed packages
    detection     running the recognizers: chunks, time limits, fallback, progress
    entity_index  the keyed entity index (second pass over a batch, queries, stored state)
    keycheck      subkeys and key check values; config_secrets: hiding lists in configs
    stage_options, stage_config   options resolved once; the configuration and its rebuilding
    wordlist      name/place word lists, query truecasing
    light         LightDetector: regexes + word lists, one text at a time (labelling data)
    concepts      TextConcept and which recognizers each concept runs
    surrogates    keyed surrogates from the shipped, versioned pool
    operators     Redact, Surrogate, Keep
    sanitizer     Sanitizer (documents, queries, LangChain document transformer)
"""

from importlib import import_module
from typing import Any

from .._lazy import lazy_attributes

_HOMES = {
    "POLICIES": "operators", "DetectionError": "detection", "Detector": "spans", "FirmDetector": "recognizers.firms",
    "LightDetector": "light", "NameDetector": "recognizers.names", "NerDetector": "recognizers.concept",
    "PatternDetector": "recognizers.concept", "PlaceDetector": "recognizers.places",
    "PresidioDetector": "recognizers.presidio", "QuantityDetector": "recognizers.concept",
    "Recognizer": "recognizers.base", "RegexDetector": "recognizers.regex", "Rule": "rules.base",
    "IdentifierDetector": "recognizers.identifiers", "Sanitizer": "sanitizer", "Span": "spans",
    "SurrogateGenerator": "surrogates", "TextConcept": "concepts", "TokenDetector": "recognizers.concept",
    "WordListDetector": "recognizers.wordlist", "concept_detectors": "concepts", "load_pool": "surrogates",
    "merge_spans": "spans", "presidio_available": "recognizers.presidio",
}
__all__ = sorted(_HOMES)
_lazy_getattr, _ = lazy_attributes(__name__, {name: f".{home}" for name, home in _HOMES.items()})


def __getattr__(name: str) -> Any:
    """The package's names, imported on first use (the package itself loads no recognizer)."""
    if name == "registry":
        return import_module(f"{__name__}.registry")
    return _lazy_getattr(name)
