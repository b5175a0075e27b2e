"""Model guesses not shaped like a name are dropped (gene symbols, cell lines, abbreviations)."""

from __future__ import annotations

import re

from ..overlap import OverlapIndex
from ..shapes import looks_like_a_name, mixed_caps
from ..spans import Span
from ..tags import as_words
from ..traits import PATTERN, has
from .base import MODEL_LABELS, RuleContext, _PartedRule, alone
from .context_free import long_text, place_code_kept

__all__ = ["MixedCaps", "NameShape", "species_shaped", "tokenised_place"]

_SPECIES = re.compile(r"[A-Z]\.[ \t]?[a-z]{3,}(?:[ \t][a-z][\w-]*)*")
_GENUS_INITIAL = re.compile(r"[A-Z]\.?")
_SPECIES_AFTER = re.compile(r"\.?[ \t]?[a-z]{3,}\b")


def species_shaped(value: str) -> bool:
    """A capital initial and a full stop, then words in lower case only: an abbreviated genus
    and its species ("C. elegans", "E. coli", "S. aureus"), the way taxonomic names are written,
    not an initial and a surname, which is capitalised like the initial ("C. Elliott") or,
    in text written in lower case, is in lower case with it ("c. elliott")."""
    return bool(_SPECIES.fullmatch(value.strip()))


# what a model's span may carry after a name or place that is none of its shape: punctuation
# ("MARIA LOPEZ,"), an age after a name ("priya raghunathan, 38") or a postcode after a town
# ("leeds ls6 2ab", "Leeds LS6 2AB")
_TAIL = re.compile(r"(?:[ \t]*[,;:]+|[ \t]*,[ \t]*\d{1,2}|[ \t]+[A-Za-z]{1,2}\d[A-Za-z\d]?[ \t]\d[A-Za-z]{2})+$")


_PIECE = re.compile(r"\S+")
_LONE_MARK = re.compile(r"[^\w#@]+")  # a token of punctuation alone: "." of "St . Mary", "-" of "- Minneapolis"


def tokenised_place(text: str, s: Span) -> Span | None:
    """``s`` without the punctuation that stands alone at its ends, when the span is a place written
    as a tokenised post writes it (punctuation between spaces: "St . Mary", "U . S .", "- Minneapolis",
    "Bowl Long Island (") and its words without that punctuation are shaped like a name; else None."""
    if s.label != "LOCATION":
        return None
    pieces = [(m.start(), m.end(), bool(_LONE_MARK.fullmatch(m.group()))) for m in _PIECE.finditer(text, s.start, s.end)]
    words = [(a, b) for a, b, mark in pieces if not mark]
    if not words or len(words) == len(pieces) or not looks_like_a_name(" ".join(text[a:b] for a, b in words)):
        return None
    return Span(words[0][0], words[-1][1], s.label, s.score, s.detector)


def _guesses_kept(text: str, spans: list[Span], shaped: object) -> list[Span]:
    """Spans that are no lone model guess, or whose text (a hashtag or handle: its words) ``shaped``
    accepts; a lone guess that fails only for its tail (:data:`_TAIL`) is kept without it."""
    out, index = [], OverlapIndex(spans)
    for s in spans:
        if s.label not in MODEL_LABELS or has(s, PATTERN) or not alone(s, spans, index=index) \
                or shaped(as_words(text, s.start, s.end)):  # type: ignore[operator]
            out.append(s)
            continue
        tail = _TAIL.search(text, s.start, s.end)
        if tail is not None and tail.start() > s.start and shaped(as_words(text, s.start, tail.start())):  # type: ignore[operator]
            out.append(Span(s.start, tail.start(), s.label, s.score, s.detector))
    return out


class NameShape(_PartedRule):
    """A name, place, group or organisation that one model or vocabulary recognizer alone found is
    dropped when it is not shaped like a name
    (:func:`~private_vectors.text.shapes.looks_like_a_name`): gene and protein symbols, cell lines
    and abbreviations ("HeLa", "FIP-2", "PCNA") are what a small NER model mistakes for names in
    scientific text. Runs on the text the recognizers read. Part ``place-codes``: in a text under
    100 words (:func:`~.context_free.long_text`), a place written as a code in capitals
    (:func:`~private_vectors.text.vocabulary.place_codes`: "UK", "US", "NY", "SC") that a model
    reported as a place stays: a short message names places that way ("trending in the UK",
    "Linwood, PA"); in a longer text about no one such a guess is an acronym ("CA" for calcium, "OR"
    for odds ratio) far more often. Since version 3 a guess that fails the test only for what
    follows the name (punctuation, "MARIA LOPEZ,"; an age, "priya raghunathan, 38"; a postcode
    after a town, "leeds ls6 2ab") is kept without it. Part ``tokenised-places`` (version 4): in a
    text under 100 words, a model's place written the way a tokenised post writes it, punctuation
    standing alone between spaces ("St . Mary", "U . S .", "- Minneapolis"), stays when its words
    without that punctuation are shaped like a name, without the punctuation at its ends
    (:func:`tokenised_place`). Rows ``name-shape``, ``name-shape.place-codes`` and
    ``name-shape.tokenised-places`` of ``benchmarks/text_rules.py``.

    Args:
        off: parts switched off, of :attr:`parts`.
    """

    name = "name-shape"
    version = "4"
    stage = "detection"
    summary = "a lone model guess not shaped like a name (a gene symbol, an abbreviation) is no name"
    parts = ("place-codes", "tokenised-places")

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        code = place_code_kept(text, "place-codes" not in self.off)
        tokenised = "tokenised-places" not in self.off and not long_text(text)
        kept = _guesses_kept(text, spans, looks_like_a_name)
        kept_set, starts = set(kept), {k.start for k in kept}
        out = kept + [s for s in spans if s not in kept_set and code(s) and s.start not in starts]
        if tokenised:
            taken = set(out)
            for s in spans:
                place = tokenised_place(text, s) if s not in taken and s.start not in starts else None
                if place is not None:
                    out.append(place)
        return out


class MixedCaps(_PartedRule):
    """The same test on the original text (detection title-cases words in capitals): a lone model
    guess mixing words in capitals with other words ("CONCLUSION Lobular", "Type III IFN") is a
    heading or an acronym beside a word, not a name (:func:`~private_vectors.text.shapes.mixed_caps`);
    part ``species``: nor is a capital initial before words in lower case, the abbreviated genus
    of a species name (:func:`species_shaped`; the learned tagger reads no case and takes
    "C. elegans" for a person in abstracts; since version 3 also its span of the initial alone,
    "C" of "C. elegans"). Row ``mixed-caps`` of
    ``benchmarks/text_rules.py``.

    Args:
        off: parts switched off, of :attr:`parts`.
    """

    name = "mixed-caps"
    version = "3"
    stage = "document"
    summary = "a lone model guess mixing words in capitals with other words is a heading, not a name"
    parts = ("species",)

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        species = "species" not in self.off
        if species:  # the tagger's span of the genus initial alone ("C" of "C. elegans")
            spans = [s for s in spans if not (s.label in MODEL_LABELS and not has(s, PATTERN)
                                              and _GENUS_INITIAL.fullmatch(text, s.start, s.end)
                                              and _SPECIES_AFTER.match(text, s.end))]
        return _guesses_kept(text, spans, lambda value: not mixed_caps(value)
                             and not (species and species_shaped(value)))
