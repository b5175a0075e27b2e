"""Concept detectors: token lists, regexes and spaCy NER labels, for built-in and user concepts.

Built-in concepts (``concepts.spec.BUILTIN_CONCEPTS``) map to detectors in :func:`concept_detectors`:

| concept | detectors (cheap first) |
|---|---|
| PII | regexes (e-mail, phone, card, IBAN, SSN, IP, URL, street) + cue/shape identifiers (handles, ID numbers, dates of birth, ages, postcodes) + name and place vocabularies + firm names made of surnames + presidio (PERSON, LOCATION, NRP, URL, identifiers) |
| PHI | PII + dates more specific than a year and ranges of them (regex and presidio/spaCy DATE_TIME), organisations (presidio ORGANIZATION, institution names by head noun with their gloss in parentheses and the acronyms defined for them), reference numbers of records, cases and registers (cue word or register-number shape), NRP, sex/gender and occupation terms (Faker's job titles and occupations named after a cue: "worked as a ..."), money (ISO 4217 codes, currency words) and spaCy MONEY/QUANTITY (:class:`QuantityDetector`) |
| quasi | dates, age patterns, demographic terms, spaCy MONEY/QUANTITY/PERCENT, presidio DATE_TIME/ORGANIZATION/NRP |
| person | first-name vocabulary (:class:`~private_vectors.text.names.NameDetector`) + presidio PERSON |
| location | street regexes + place vocabulary + presidio LOCATION |
| datetime | date regexes + weekday/month tokens + presidio DATE_TIME |
| demographic | sex/gender vocabulary + age patterns + presidio NRP |
| medical | the shipped disease and symptom vocabulary |

Presets (``PII``, ``PHI``, ``quasi``) and their sources are in :mod:`.presets`. A list of concepts
runs one pass with the union of their detectors (:func:`union_detectors`).
A user concept is a :class:`TextConcept` (tokens, regexes, spaCy NER labels) or a
``concepts.Concept`` built with ``from_tokens`` / ``from_spacy``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import InvalidParameterError, InvalidTypeError
from ..fitted.removal import find_tokens
from .identifiers import IdentifierDetector
from .names import FirmDetector, NameDetector, PlaceDetector
from .presets import PRESETS
from .presidio import PresidioDetector, presidio_available
from .regex import _YEAR, REGEX_LABELS, RegexDetector
from .spans import Detector, Span, validate_texts
from .wordlist import WordListDetector

__all__ = ["NerDetector", "PatternDetector", "QuantityDetector", "TextConcept", "TokenDetector", "concept_detectors", "union_detectors"]

_DATA = Path(__file__).resolve().parents[1] / "data" / "concepts"
_SPACY_TO_LABEL = {"PERSON": "PERSON", "GPE": "LOCATION", "LOC": "LOCATION", "FAC": "LOCATION",
                   "NORP": "NRP", "DATE": "DATE_TIME", "TIME": "DATE_TIME", "ORG": "ORGANIZATION"}
_WEEKDAYS_MONTHS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January", "February", "March", "April", "June", "July", "August", "September", "October", "November", "December"]
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
_AGE = r"\b\d{1,3}[- ](?:years?|yrs?)[- ]old\b|\b(?:aged?|age)\s+\d{1,3}\b|\b\d{1,3}[- ]year[- ]old\b"


def _read_list(name: str) -> list[str]:
    return [ln.strip() for ln in (_DATA / name).read_text("utf-8").splitlines()
            if ln.strip() and not ln.startswith("#")]


@lru_cache(maxsize=1)
def medical_vocabulary() -> tuple[str, ...]:
    """Diseases and symptoms shipped with the built-in ``medical`` concept."""
    return tuple(_read_list("medical_diseases.txt") + _read_list("medical_symptoms.txt"))


class TokenDetector:
    """Occurrences of listed tokens (word boundaries, case-insensitive by default).

    Args:
        tokens: words or multi-word phrases.
        label: the label of every span.
        case_sensitive: match the exact case.
        name: detector name (in spans and config).
    """

    def __init__(self, tokens: Sequence[str], *, label: str, case_sensitive: bool = False,
                 name: str = "tokens") -> None:
        if isinstance(tokens, str):
            raise InvalidTypeError("tokens", "a list of strings", tokens, note="wrap a single token in a list")
        toks = [t for t in tokens if isinstance(t, str) and t.strip()]
        if not toks:
            raise InvalidParameterError("tokens", "at least one non-blank token", tokens)
        _check_label(label)
        self.tokens = tuple(toks)
        self.label = label
        self.case_sensitive = bool(case_sensitive)
        self.name = name

    def __repr__(self) -> str:
        return f"TokenDetector({len(self.tokens)} tokens, label={self.label!r})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        return [[Span(a, b, self.label, 1.0, self.name)
                 for a, b, _ in find_tokens(t, self.tokens, case_sensitive=self.case_sensitive)]
                for t in validate_texts(texts)]

    def get_config(self) -> dict[str, Any]:
        return {"type": "tokens", "name": self.name, "label": self.label, "tokens": list(self.tokens),
                "case_sensitive": self.case_sensitive}


class PatternDetector:
    """Matches of regular expressions (Python ``re`` syntax), one label.

    Args:
        patterns: regular expressions.
        label: the label of every span.
        ignore_case: compile with ``re.IGNORECASE``.
        score: the score of every span.
        name: detector name.
    """

    def __init__(self, patterns: Sequence[str], *, label: str, ignore_case: bool = True, score: float = 0.9,
                 name: str = "pattern") -> None:
        if isinstance(patterns, str):
            patterns = [patterns]
        pats = list(patterns)
        if not pats:
            raise InvalidParameterError("patterns", "at least one regular expression", patterns)
        compiled = []
        for i, p in enumerate(pats):
            try:
                compiled.append(re.compile(p, re.IGNORECASE if ignore_case else 0))
            except (re.error, TypeError) as exc:
                raise InvalidParameterError(f"patterns[{i}]", "a valid regular expression", p) from exc
        _check_label(label)
        self.patterns = tuple(pats)
        self.label = label
        self.ignore_case = bool(ignore_case)
        self.score = float(score)
        self.name = name
        self._compiled = compiled

    def __repr__(self) -> str:
        return f"PatternDetector({len(self.patterns)} patterns, label={self.label!r})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        return [[Span(m.start(), m.end(), self.label, self.score, self.name)
                 for c in self._compiled for m in c.finditer(t) if m.end() > m.start()]
                for t in validate_texts(texts)]

    def get_config(self) -> dict[str, Any]:
        return {"type": "pattern", "name": self.name, "label": self.label, "patterns": list(self.patterns),
                "ignore_case": self.ignore_case, "score": self.score}


class NerDetector:
    """spaCy NER entities with the given labels (the pipeline presidio loaded, shared).

    Args:
        labels: spaCy labels (``["ORG", "PRODUCT"]``) or a mapping spaCy label -> span label;
            a list maps the usual ones to presidio names (GPE -> LOCATION, NORP -> NRP, ...).
        model: spaCy model, see :func:`~private_vectors.text.presidio.resolve_spacy_model`.
        batch_size: texts per ``nlp.pipe`` batch.
    """

    name = "ner"

    def __init__(self, labels: Sequence[str] | Mapping[str, str], *, model: str | None = None,
                 batch_size: int = 32) -> None:
        if isinstance(labels, str):
            raise InvalidTypeError("labels", "a list of spaCy labels or a mapping", labels)
        mapping = dict(labels) if isinstance(labels, Mapping) else {x: _SPACY_TO_LABEL.get(x, x) for x in labels}
        if not mapping:
            raise InvalidParameterError("labels", "at least one spaCy NER label", labels)
        self.labels = mapping
        self.model = model
        self.batch_size = int(batch_size)
        from .presidio import _engine

        analyzer, self._meta = _engine(model)
        self._nlp = analyzer.nlp_engine.nlp["en"]

    def __repr__(self) -> str:
        return f"NerDetector(labels={self.labels})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        texts = validate_texts(texts)
        return [[Span(e.start_char, e.end_char, self.labels[e.label_], 0.85, self.name)
                 for e in doc.ents if e.label_ in self.labels]
                for doc in self._nlp.pipe(texts, batch_size=self.batch_size)]

    def get_config(self) -> dict[str, Any]:
        return {"type": "ner", "labels": dict(self.labels), "spacy_model": dict(self._meta), "model": self.model}


_REFERENCE_BEFORE = re.compile(r"(?:article|art\.|§|paragraph|para\.|no\.|nos\.|rule|protocol|section|point|"
                               r"page|pp?\.|chapter|table|figure|fig\.|item|annex|number|volume|vol\.)[ \t]*$",
                               re.IGNORECASE)


class QuantityDetector(NerDetector):
    """Amounts of money and measured quantities ("80 kg", "3 hectares") that can single a person
    out, from spaCy's MONEY and QUANTITY entities, validated: a bare year is no quantity, nor is a
    number after a reference word ("Article 6", "paragraph 12", "Table 2"). Plain counts
    (CARDINAL: "two cases", "seven other persons") and percentages (scores, odds, rates) are
    not taken: on TAB train, counts added 13 annotated tokens for about 100 unannotated ones."""

    name = "quantity"

    def __init__(self, *, model: str | None = None, batch_size: int = 32) -> None:
        super().__init__({"MONEY": "QUANTITY", "QUANTITY": "QUANTITY"}, model=model, batch_size=batch_size)

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        texts = validate_texts(texts)
        out = []
        for text, doc in zip(texts, self._nlp.pipe(texts, batch_size=self.batch_size), strict=True):
            out.append([Span(e.start_char, e.end_char, "QUANTITY", 0.8, self.name) for e in doc.ents
                        if e.label_ in self.labels and _is_quantity(text, e.start_char, e.end_char)])
        return out

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "type": "quantity"}


def _is_quantity(text: str, a: int, b: int) -> bool:
    """Not a bare year, not a number after a reference word."""
    return not (_YEAR.fullmatch(text[a:b].strip()) or _REFERENCE_BEFORE.search(text, max(0, a - 12), a))


def _check_label(label: Any) -> None:
    if not isinstance(label, str) or not re.fullmatch(r"[A-Z][A-Z0-9_]*", label):
        raise InvalidParameterError("label", "an upper-case label such as 'PERSON' or 'PROJECT_CODE'", label)


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
                      PatternDetector([_AGE], label="DEMOGRAPHIC", name="demographic:age"), *model], fb
    return name, [TokenDetector(medical_vocabulary(), label="MEDICAL", name="medical:tokens"),
                  PatternDetector([_DIAGNOSIS_CUE, _DISEASE_SHAPE], label="MEDICAL", score=0.8, name="medical:pattern")], False
