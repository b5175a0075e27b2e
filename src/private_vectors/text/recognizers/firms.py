"""Firm names made of surnames ("Hawkins, Richardson and Santana"), labelled ORGANIZATION, not people."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..scores import SCORES, score_param
from ..spans import Span, validate_texts
from ..vocabulary import UPPER_LETTERS, common_words, digest, function_words, places, word_key
from .base import Recognizer
from .words import title_case

__all__ = ["FirmDetector"]

_CAP_WORD = rf"[{UPPER_LETTERS}][^\W\d_]*(?:['’-][^\W\d_]+)?"
# Firm names made of surnames: "Hawkins, Richardson and Santana", "Thomas and Sons", "Barnett Ltd".
# No Oxford comma, and no capitalised word after it unless a firm word: a title ("Diseases,
# Injuries, and Risk Factors", "Windows, Linux and Mac OSX") is no firm.
_FIRM_TRIPLE = re.compile(rf"\b({_CAP_WORD}), ({_CAP_WORD}) (?:and|&) ({_CAP_WORD})(?![\w'’-])"
                          rf"(?![ \t]+(?!(?:Orchestra|Partners|Group|LLP|LLC|Inc|Ltd|PLC)\b)[{UPPER_LETTERS}])")
_FIRM_SONS = re.compile(rf"\b({_CAP_WORD}) (?:and|&) Sons(?!\w)")
_FIRM_SUFFIX = re.compile(rf"\b({_CAP_WORD}(?: {_CAP_WORD}){{0,2}}),? (?:Inc|LLC|Ltd|PLC|GmbH|Corp|AG)\.?(?!\w)")


class FirmDetector(Recognizer):
    """ORGANIZATION spans for firm names built from surnames, so they are not taken for people.

    spaCy's small model and the name detector call "Hawkins, Richardson and Santana" (a law-firm
    style name) or "Thomas and Sons" three people or one; they are an organisation, which is
    still identifying (an employer), so the PII concept redacts it under its own label. Found:
    three capitalised words "A, B and C" of letters, none a function word and at most one a
    common English word or a place ("Clark, Romero and Hall"; not "Red, Green and Blue" or
    "France, Spain and Italy"), with no Oxford comma and no capitalised word after them but a
    firm word (a title is no firm), that do not end an enumeration ("They had 6: Gaetane, Hannah, Anthony, Derek, Anna and Andrew"); "A and Sons";
    one to three capitalised words before a company suffix (Inc, LLC, Ltd, PLC, GmbH, Corp, AG).
    The score is above the name detectors' and presidio's, so the firm wins a merge with a
    PERSON span. Three people named without an enumeration cue ("Smith, Jones and Brown found")
    are taken for a firm: still replaced, under ORGANIZATION (redacted, never given a surrogate).
    The vocabularies cannot tell them apart: the pool has "Smith" and "Santana" as first names.

    Args:
        score: the score of a firm span.
    """

    kind = "firms"
    name = "firms"
    version = "5"
    entities = ("ORGANIZATION",)

    def __init__(self, *, score: float = SCORES.firm) -> None:
        self.score = score_param("score", score)

    def __repr__(self) -> str:
        return f"FirmDetector(score={self.score})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """ORGANIZATION spans per text."""
        known, common = places(), common_words()
        return [self._one(t, known, common) for t in validate_texts(texts)]

    def _one(self, text: str, known: frozenset[str], common: frozenset[str]) -> list[Span]:
        out = []
        stop = function_words()
        for m in _FIRM_TRIPLE.finditer(text):
            if text[max(0, m.start() - 8):m.start()].rstrip(" \t")[-1:] in (",", ":"):  # ends an enumeration
                continue
            words = m.groups()  # a surname may be a word ("Hall", "Brown"); three words are not a firm
            if all(title_case(w) and len(w) >= 3 and word_key(w) not in stop for w in words) \
                    and sum(word_key(w) in common or word_key(w) in known for w in words) <= 1:
                out.append(Span(m.start(), m.end(), "ORGANIZATION", self.score, self.name))
        for pattern in (_FIRM_SONS, _FIRM_SUFFIX):
            for m in pattern.finditer(text):
                if word_key(m.group(1).split()[0]) not in common:
                    out.append(Span(m.start(), m.end(), "ORGANIZATION", self.score, self.name))
        return sorted(out, key=lambda sp: (sp.start, sp.end))

    def get_config(self) -> dict[str, Any]:
        return {"type": self.kind, "version": self.version, "score": self.score,
                "vocabulary": {"places": digest(places()), "common_words": digest(common_words())}}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FirmDetector:
        return cls(score=config.get("score", SCORES.firm))
