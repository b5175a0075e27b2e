"""The text stage: detect concept spans, then redact them, replace them with keyed surrogates, or keep them.

Detectors (``spans(texts) -> list[list[Span]]``) are split from operators (redact /
surrogate / keep), as presidio splits recognizers from anonymizer operators.

    spans       Span, the Detector protocol, merging, chunking
    regex       RegexDetector (e-mail, phone, card, IBAN, SSN, IP, dates, streets)
    presidio    PresidioDetector (presidio-analyzer + spaCy small English, offline, verified)
    names       NameDetector, PlaceDetector, FirmDetector (vocabularies: the shipped multilingual name/city pool, countries)
    wordlist    WordListDetector (fallback without presidio), query truecasing
    concepts    TokenDetector, PatternDetector, NerDetector, TextConcept, built-in concept detectors
    surrogates  keyed surrogates from the shipped, versioned pool
    operators   Redact, Surrogate, Keep
    sanitizer   Sanitizer (documents, queries, LangChain document transformer)
"""

from .concepts import NerDetector, PatternDetector, TextConcept, TokenDetector, concept_detectors
from .names import FirmDetector, NameDetector, PlaceDetector
from .operators import POLICIES
from .presidio import PresidioDetector, presidio_available
from .regex import RegexDetector
from .sanitizer import DetectionError, Sanitizer
from .spans import Detector, Span, merge_spans
from .surrogates import SurrogateGenerator, load_pool
from .wordlist import WordListDetector

__all__ = [
    "POLICIES",
    "DetectionError",
    "Detector",
    "FirmDetector",
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
