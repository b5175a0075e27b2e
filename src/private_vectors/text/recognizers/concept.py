"""Recognizers a user concept is made of: listed tokens, regular expressions, spaCy NER labels.

:class:`TokenDetector` and :class:`PatternDetector` are presidio's deny-list and pattern
recognizers in this project's batched form; :class:`NerDetector` reads spaCy's entities from the
pipeline presidio loaded (shared); :class:`QuantityDetector` takes amounts of money and measured
quantities from it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import InvalidParameterError, InvalidTypeError
from ...fitted.removal import find_tokens
from ..scores import PATTERN_SCORES, SCORES
from ..spans import Span, validate_texts
from ..traits import MODEL
from .base import Recognizer
from .regex import _YEAR

__all__ = ["NerDetector", "PatternDetector", "QuantityDetector", "TokenDetector", "check_label"]

_SPACY_TO_LABEL = {"PERSON": "PERSON", "GPE": "LOCATION", "LOC": "LOCATION", "FAC": "LOCATION",
                   "NORP": "NRP", "DATE": "DATE_TIME", "TIME": "DATE_TIME", "ORG": "ORGANIZATION"}


class TokenDetector(Recognizer):
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
        check_label(label)
        self.tokens = tuple(toks)
        self.label = label
        self.case_sensitive = bool(case_sensitive)
        self.name = name

    kind = "tokens"

    @property
    def labels(self) -> tuple[str, ...]:
        return (self.label,)

    def __repr__(self) -> str:
        return f"TokenDetector({len(self.tokens)} tokens, label={self.label!r})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        return [[Span(a, b, self.label, SCORES.certain, self.name)
                 for a, b, _ in find_tokens(t, self.tokens, case_sensitive=self.case_sensitive)]
                for t in validate_texts(texts)]

    def get_config(self) -> dict[str, Any]:
        return {"type": "tokens", "name": self.name, "label": self.label, "tokens": list(self.tokens),
                "case_sensitive": self.case_sensitive}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TokenDetector:
        return cls(config["tokens"], label=config["label"], case_sensitive=config.get("case_sensitive", False),
                   name=config.get("name", "tokens"))


class PatternDetector(Recognizer):
    """Matches of regular expressions (Python ``re`` syntax), one label.

    Args:
        patterns: regular expressions.
        label: the label of every span.
        ignore_case: compile with ``re.IGNORECASE``.
        score: the score of every span.
        name: detector name.
    """

    def __init__(self, patterns: Sequence[str], *, label: str, ignore_case: bool = True, score: float = SCORES.concept_pattern,
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
        check_label(label)
        self.patterns = tuple(pats)
        self.label = label
        self.ignore_case = bool(ignore_case)
        self.score = float(score)
        self.name = name
        self._compiled = compiled

    kind = "pattern"

    @property
    def labels(self) -> tuple[str, ...]:
        return (self.label,)

    def __repr__(self) -> str:
        return f"PatternDetector({len(self.patterns)} patterns, label={self.label!r})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        return [[Span(m.start(), m.end(), self.label, self.score, self.name)
                 for c in self._compiled for m in c.finditer(t) if m.end() > m.start()]
                for t in validate_texts(texts)]

    def get_config(self) -> dict[str, Any]:
        return {"type": "pattern", "name": self.name, "label": self.label, "patterns": list(self.patterns),
                "ignore_case": self.ignore_case, "score": self.score}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PatternDetector:
        return cls(config["patterns"], label=config["label"], ignore_case=config.get("ignore_case", True),
                   score=config.get("score", SCORES.concept_pattern), name=config.get("name", "pattern"))


class NerDetector(Recognizer):
    """spaCy NER entities with the given labels (the pipeline presidio loaded, shared).

    Args:
        labels: spaCy labels (``["ORG", "PRODUCT"]``) or a mapping spaCy label -> span label;
            a list maps the usual ones to presidio names (GPE -> LOCATION, NORP -> NRP, ...).
        model: spaCy model, see :func:`~private_vectors.text.recognizers.presidio.resolve_spacy_model`.
        batch_size: texts per ``nlp.pipe`` batch.
    """

    kind = "ner"
    name = "ner"
    traits = frozenset([MODEL])

    def __init__(self, labels: Sequence[str] | Mapping[str, str], *, model: str | None = None,
                 batch_size: int = 32) -> None:
        if isinstance(labels, str):
            raise InvalidTypeError("labels", "a list of spaCy labels or a mapping", labels)
        mapping = dict(labels) if isinstance(labels, Mapping) else {x: _SPACY_TO_LABEL.get(x, x) for x in labels}
        if not mapping:
            raise InvalidParameterError("labels", "at least one spaCy NER label", labels)
        self.mapping = mapping
        self.model = model
        self.batch_size = int(batch_size)
        from ..spacy_model import describe_spacy_model

        self._meta = describe_spacy_model(model)[1]
        self._loaded: Any = None  # spaCy is loaded on first use

    @property
    def _nlp(self) -> Any:
        """The spaCy pipeline presidio loaded (shared), loaded on first use."""
        if self._loaded is None:
            from .presidio import _engine

            self._loaded = _engine(self.model)[0].nlp_engine.nlp["en"]
        return self._loaded

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.mapping.values()))

    def __repr__(self) -> str:
        return f"NerDetector(labels={self.mapping})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        texts = validate_texts(texts)
        return [[Span(e.start_char, e.end_char, self.mapping[e.label_], PATTERN_SCORES["concept"]["entity"], self.name)
                 for e in doc.ents if e.label_ in self.mapping]
                for doc in self._nlp.pipe(texts, batch_size=self.batch_size)]

    def get_config(self) -> dict[str, Any]:
        return {"type": "ner", "labels": dict(self.mapping), "spacy_model": dict(self._meta), "model": self.model}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> NerDetector:
        return cls(config["labels"], model=config.get("model"))


_REFERENCE_BEFORE = re.compile(r"(?:article|art\.|§|paragraph|para\.|no\.|nos\.|rule|protocol|section|point|"
                               r"page|pp?\.|chapter|table|figure|fig\.|item|annex|number|volume|vol\.)[ \t]*$",
                               re.IGNORECASE)


class QuantityDetector(NerDetector):
    """Amounts of money and measured quantities ("80 kg", "3 hectares") that can single a person
    out, from spaCy's MONEY and QUANTITY entities, validated: a bare year is no quantity, nor is a
    number after a reference word ("Article 6", "paragraph 12", "Table 2"). Plain counts
    (CARDINAL: "two cases", "seven other persons") and percentages (scores, odds, rates) are
    not taken: on TAB train, counts added 13 annotated tokens for about 100 unannotated ones."""

    kind = "quantity"
    name = "quantity"
    traits: frozenset[str] = frozenset()

    def __init__(self, *, model: str | None = None, batch_size: int = 32) -> None:
        super().__init__({"MONEY": "QUANTITY", "QUANTITY": "QUANTITY"}, model=model, batch_size=batch_size)

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        texts = validate_texts(texts)
        out = []
        for text, doc in zip(texts, self._nlp.pipe(texts, batch_size=self.batch_size), strict=True):
            out.append([Span(e.start_char, e.end_char, "QUANTITY", PATTERN_SCORES["concept"]["quantity"], self.name) for e in doc.ents
                        if e.label_ in self.mapping and _is_quantity(text, e.start_char, e.end_char)])
        return out

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "type": "quantity"}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> QuantityDetector:
        return cls(model=config.get("model"))


def _is_quantity(text: str, a: int, b: int) -> bool:
    """Not a bare year, not a number after a reference word."""
    return not (_YEAR.fullmatch(text[a:b].strip()) or _REFERENCE_BEFORE.search(text, max(0, a - 12), a))


def check_label(label: Any) -> None:
    """Refuse a label that is not upper case (``"PERSON"``, ``"PROJECT_CODE"``)."""
    if not isinstance(label, str) or not re.fullmatch(r"[A-Z][A-Z0-9_]*", label):
        raise InvalidParameterError("label", "an upper-case label such as 'PERSON' or 'PROJECT_CODE'", label)


