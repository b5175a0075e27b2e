"""Which recognizers a concept runs: the presets, the built-in span concepts and user concepts.

Built-in concepts (``fitted.spec.BUILTIN_CONCEPTS``) map to recognizers in :func:`concept_detectors`:

| concept | recognizers (cheap first) |
|---|---|
| PII | regexes (e-mail, phone, card, IBAN, SSN, IP, URL, street) + cue/shape identifiers (handles, ID numbers, dates of birth, ages, postcodes) + name and place vocabularies + firm names made of surnames + presidio (PERSON, LOCATION, NRP, URL, identifiers) |
| PHI | PII + dates more specific than a year and ranges of them (regex and presidio/spaCy DATE_TIME), organisations (presidio ORGANIZATION, institution names by head noun with their gloss in parentheses and the acronyms defined for them), reference numbers of records, cases and registers (cue word or register-number shape), NRP, sex/gender and occupation terms (Faker's job titles and occupations named after a cue: "worked as a ..."), money (ISO 4217 codes, currency words) and spaCy MONEY/QUANTITY (:class:`QuantityDetector`) |
| quasi | dates, age patterns, demographic terms, spaCy MONEY/QUANTITY/PERCENT, presidio DATE_TIME/ORGANIZATION/NRP |
| person | first-name vocabulary (:class:`~private_vectors.text.recognizers.names.NameDetector`) + presidio PERSON |
| location | street regexes + place vocabulary + presidio LOCATION |
| datetime | date regexes + weekday/month tokens + presidio DATE_TIME |
| demographic | sex/gender vocabulary + age patterns + presidio NRP |
| medical | the shipped disease and symptom vocabulary |

Presets (``PII``, ``PHI``, ``quasi``) and their sources are in :mod:`.presets`. A list of concepts
runs one pass with the union of their detectors (:func:`union_detectors`).
A user concept is a :class:`TextConcept` (tokens, regexes, spaCy NER labels) or a
``fitted.Concept`` built with ``from_tokens`` / ``from_spacy``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import InvalidParameterError
from .presets import PRESETS
from .recognizers.concept import NerDetector, PatternDetector, QuantityDetector, TokenDetector
from .recognizers.firms import FirmDetector
from .recognizers.identifiers import IdentifierDetector
from .recognizers.names import NameDetector
from .recognizers.places import PlaceDetector
from .recognizers.presidio import PresidioDetector, presidio_available
from .recognizers.regex import REGEX_LABELS, RegexDetector
from .recognizers.wordlist import WordListDetector
from .scores import PATTERN_SCORES
from .spans import Detector
from .vocabulary import AGE, MONTHS, WEEKDAYS

__all__ = ["NerDetector", "PatternDetector", "QuantityDetector", "TextConcept", "TokenDetector", "concept_detectors",
           "union_detectors"]

_DATA = Path(__file__).resolve().parents[1] / "data" / "concepts"
_WEEKDAYS_MONTHS = [*WEEKDAYS, *(m for m in MONTHS if m != "May")]  # "may", the verb, is no date
_PII_PRESIDIO = ("PERSON", "LOCATION", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN",
                 "IP_ADDRESS", "URL", "UK_NHS", "MEDICAL_LICENSE")
_PII_REGEX = tuple(x for x in REGEX_LABELS if x != "DATE_TIME")
_PII_IDS = ("HANDLE", "ID_NUMBER", "DATE_OF_BIRTH", "AGE", "POSTCODE", "PERSON")
_PHI_PRESIDIO = ("DATE_TIME", "ORGANIZATION", "NRP")
_PHI_IDS = ("DATE_TIME", "QUANTITY", "ORGANIZATION", "REFERENCE", "OCCUPATION")
_QUANTITY = {"MONEY": "QUANTITY", "QUANTITY": "QUANTITY", "PERCENT": "QUANTITY"}
# a diagnosis after a clinical cue ("diagnosed with", "Diagnosis:", "Assessment:"), up to the clause's end
_DIAGNOSIS_CUE = (r"(?:(?<=diagnosed with )|(?<=diagnosis of )|(?<=diagnosis: )|(?<=diagnosis )|(?<=assessment: )"
                  r"|(?<=impression: )|(?<=history of ))[a-z][\w'()/-]*(?: [\w'()/-]+){0,5}?(?=[.;,\n]| and | with |$)")
# a disease by its medical word shape: -itis, -osis, -oma, -emia/-aemia, -pathy, -plasia, neoplasm, syndrome
_DISEASE_SHAPE = (r"\b(?:[a-z]+ ){0,2}[a-z]+(?:itis|osis|omas?|a?emia|pathy|plasia|neoplasms?)\b"
                  r"|\b(?:[a-z]+ ){1,2}(?:syndrome|disease|disorder|infection)\b")


def _read_list(name: str) -> list[str]:
    return [ln.strip() for ln in (_DATA / name).read_text("utf-8").splitlines()
            if ln.strip() and not ln.startswith("#")]


@lru_cache(maxsize=1)
def medical_vocabulary() -> tuple[str, ...]:
    """Diseases and symptoms shipped with the built-in ``medical`` concept."""
    return tuple(_read_list("medical_diseases.txt") + _read_list("medical_symptoms.txt"))


@dataclass(frozen=True)
class TextConcept:
    """A user concept for the text stage: tokens, regexes and/or spaCy NER labels.

    Attributes:
        name: concept name (recorded in configs).
        tokens: words/phrases (case-insensitive).
        patterns: regular expressions.
        ner_labels: spaCy NER labels (ORG, PRODUCT, EVENT, ...).
        label: the span label for tokens and patterns (default: the upper-cased name).
    """

    name: str
    tokens: tuple[str, ...] = field(default=())
    patterns: tuple[str, ...] = field(default=())
    ner_labels: tuple[str, ...] = field(default=())
    label: str | None = None

    def span_label(self) -> str:
        return self.label or re.sub(r"\W+", "_", self.name).upper()

    def detectors(self) -> list[Detector]:
        out: list[Detector] = []
        if self.patterns:
            out.append(PatternDetector(list(self.patterns), label=self.span_label(), name=f"{self.name}:pattern"))
        if self.tokens:
            out.append(TokenDetector(list(self.tokens), label=self.span_label(), name=f"{self.name}:tokens"))
        if self.ner_labels:
            out.append(NerDetector(list(self.ner_labels)))
        if not out:
            raise InvalidParameterError("concept", "a TextConcept with tokens, patterns or ner_labels", self)
        return out

    def get_config(self) -> dict[str, Any]:
        return {"type": "text_concept", "name": self.name, "tokens": list(self.tokens),
                "patterns": list(self.patterns), "ner_labels": list(self.ner_labels), "label": self.label}


def _model_or_fallback(entities: Sequence[str]) -> tuple[list[Detector], bool]:
    """A presidio detector for ``entities``, or the word-list fallback (True) when presidio is absent."""
    if presidio_available():
        return [PresidioDetector(entities=entities)], False
    wanted = [e for e in entities if e in ("PERSON", "LOCATION")]
    return ([WordListDetector()] if wanted else []), True


def _pii_detectors(extra_presidio: tuple[str, ...] = (), extra_ids: tuple[str, ...] = ()
                   ) -> tuple[list[Detector], bool]:
    model, fb = _model_or_fallback(_PII_PRESIDIO + extra_presidio)
    return [RegexDetector(entities=_PII_REGEX), NameDetector(), PlaceDetector(), FirmDetector(),
            IdentifierDetector(entities=_PII_IDS + extra_ids), *model], fb


def _phi_detectors() -> tuple[list[Detector], bool]:
    """PII's detectors, plus dates, organisations, demographic attributes and amounts
    (see :mod:`.presets` for why Safe Harbor's 18th identifier covers them)."""
    pii, fb = _pii_detectors(_PHI_PRESIDIO, _PHI_IDS)
    ner = [QuantityDetector()] if not fb else []
    return [*pii, _demographic_tokens(), TokenDetector(occupations(), label="DEMOGRAPHIC", name="occupation:tokens"),
            *ner], fb


@lru_cache(maxsize=1)
def occupations() -> tuple[str, ...]:
    """Occupations: Faker's English job titles (``faker.providers.job``), each title's part before
    a comma ("Teacher, primary school" -> "teacher"), in lower case."""
    from faker.providers.job.en_US import Provider

    return tuple(sorted({j.split(",")[0].strip().lower() for j in Provider.jobs} - {"copy", "land", "make", "sub"}))


def _demographic_tokens() -> TokenDetector:
    return TokenDetector(_read_list("demographic_terms.txt"), label="DEMOGRAPHIC", name="demographic:tokens")


def _preset_detectors(name: str) -> tuple[list[Detector], bool]:
    """Detectors of the presets ``PII``, ``PHI`` and ``quasi`` (see :mod:`.presets`)."""
    if name == "PII":
        return _pii_detectors()
    if name == "PHI":
        return _phi_detectors()
    model, fb = _model_or_fallback(("DATE_TIME", "ORGANIZATION", "NRP"))
    ner = [NerDetector(_QUANTITY)] if not fb else []
    return [IdentifierDetector(entities=["DATE_TIME", "AGE"]),
            TokenDetector(_read_list("demographic_terms.txt"), label="DEMOGRAPHIC", name="demographic:tokens"),
            *ner, *model], fb


def _preset_name(concept: Any) -> str | None:
    if isinstance(concept, str):
        for name in PRESETS:
            if name.lower() == concept.strip().lower():
                return name
    return None


def union_detectors(detectors: Sequence[Detector]) -> list[Detector]:
    """One detector per kind where kinds merge (regex, identifiers, presidio: the union of their
    entities, so presidio and spaCy run once), other detectors once each (same config)."""
    out: list[Detector] = []
    seen: set[str] = set()
    merged: dict[type, list[str]] = {}
    for d in detectors:
        if isinstance(d, (RegexDetector, IdentifierDetector, PresidioDetector)):
            merged.setdefault(type(d), [])
            merged[type(d)] += [e for e in d.entities if e not in merged[type(d)]]
            continue
        key = json.dumps(d.get_config(), sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(d)
    firsts = [RegexDetector, IdentifierDetector]
    head = [kind(entities=merged[kind]) for kind in firsts if kind in merged]
    tail = [PresidioDetector(entities=merged[PresidioDetector])] if PresidioDetector in merged else []
    return head + out + tail


def concept_detectors(concept: Any) -> tuple[str, list[Detector], bool]:
    """(concept name, detectors cheap first, whether the word-list fallback replaced presidio).

    A list of concepts gives the union of their detectors (one pass), named ``"PII+medical"``."""
    from ..fitted.spec import Concept, canonical_builtin

    if isinstance(concept, (list, tuple)):
        if not concept:
            raise InvalidParameterError("concept", "a concept name or a non-empty list of concepts", concept)
        parts = [concept_detectors(c) for c in concept]
        return ("+".join(p[0] for p in parts), union_detectors([d for p in parts for d in p[1]]),
                any(p[2] for p in parts))
    if isinstance(concept, TextConcept):
        return concept.name, concept.detectors(), False
    if isinstance(concept, Concept):
        spec = concept.spec
        if spec.get("type") == "tokens":
            return concept.name, TextConcept(concept.name, tokens=tuple(spec["tokens"])).detectors(), False
        if spec.get("type") == "spacy":
            return concept.name, [NerDetector(list(spec["labels"]))], False
        raise InvalidParameterError("concept", "a Concept built with from_tokens or from_spacy (the text stage "
                                    "needs tokens or NER labels), a TextConcept or a built-in name",
                                    spec.get("type"))
    preset = _preset_name(concept)
    if preset is not None:
        return preset, *_preset_detectors(preset)
    name = canonical_builtin(concept)
    if name == "person":
        model, fb = _model_or_fallback(("PERSON",))
        return name, [NameDetector(), *model], fb
    if name == "location":
        model, fb = _model_or_fallback(("LOCATION",))
        return name, [RegexDetector(entities=["LOCATION"]), PlaceDetector(), *model], fb
    if name == "datetime":
        model, fb = _model_or_fallback(("DATE_TIME",))
        return name, [RegexDetector(entities=["DATE_TIME"]),
                      TokenDetector(_WEEKDAYS_MONTHS, label="DATE_TIME", name="datetime:tokens"), *model], fb
    if name == "demographic":
        model, fb = _model_or_fallback(("NRP",))
        return name, [TokenDetector(_read_list("demographic_terms.txt"), label="DEMOGRAPHIC",
                                    name="demographic:tokens"),
                      PatternDetector([AGE], label="DEMOGRAPHIC", name="demographic:age"), *model], fb
    return name, [TokenDetector(medical_vocabulary(), label="MEDICAL", name="medical:tokens"),
                  PatternDetector([_DIAGNOSIS_CUE, _DISEASE_SHAPE], label="MEDICAL", score=PATTERN_SCORES["concept"]["medical_pattern"],
                                 name="medical:pattern")], False
