"""Where the learned tagger reads, a name or place that only capitalising a lower-case word made is no name."""

from __future__ import annotations

import re

from ..overlap import OverlapIndex
from ..recognizers.words import sentence_initial
from ..spans import Span
from ..traits import DERIVED, PATTERN, has
from ..vocabulary import (
    common_words,
    countries,
    encoder_words,
    english_words,
    known_words,
    places,
    stop_words,
    word_key,
)
from ..wordlist import plain_nouns
from .base import MODEL_LABELS, RuleContext, _PartedRule, learned
from .context_free import long_text

__all__ = ["LowerCaseGuesses"]

_NEXT_WORD = re.compile(r" ([^\W\d_]{3,})\b")
_WORD = re.compile(r"[^\W\d_]+")


class LowerCaseGuesses(_PartedRule):
    """With ``detector="model"``, a name, place, group or organisation written entirely in lower
    case that a recognizer reading capital letters found (the name and place lists, spaCy's
    model; they read an all-lower-case text after its known name and place words were
    capitalised, so "bill", "mark", "rose", "jack", "turkey" and "new jersey" are names and places
    to them) is dropped unless the learned tagger reports a span overlapping it. The tagger reads
    no case, so its silence on a lower-case word is the opinion that counts there: in chat and
    tickets these words are ordinary far more often than names. Part ``sentence-initial``: the
    same for a name of one word capitalised only because it opens a sentence, when no name or
    place list knows it (:func:`~private_vectors.text.wordlist.plain_nouns`, not a place or a
    country: "Email zebulon@...", "Attendance : 3,900"); places are left alone (the place
    lists lack many real towns, "Chesterfield", "Wigan"). Part ``common-places``: a one-word place
    in lower case that only the tagger reports and that is a common English word
    (:func:`~private_vectors.text.vocabulary.common_words`: "near the river", "at the station"),
    not a known city or country, is dropped too. Part ``unknown-neighbours``: in a text under
    100 words (:func:`~.context_free.long_text`: chat, tickets, queries), a lower-case name the
    tagger reports takes in the lower-case word of three letters or more right after it (one
    space apart: a surname follows the given name, while the word before a name is more often a
    greeting or a chat word) when neither the encoder's vocabulary
    (:func:`~private_vectors.text.vocabulary.encoder_words`) nor the common words know it and no
    other span holds it: the tagger reads a rare surname as WordPiece fragments and sometimes
    leaves it out ("amelia okafor" kept as "<PERSON> okafor"). Part ``unknown-names``: in a text
    under 100 words, a lower-case name of two words or more that no vocabulary knows (spaCy's
    lower-case words, the encoder's, the common words, the places: :func:`_unknown_words`; the
    name list reports such a pair only in an otherwise plain-English sentence), in a text with
    two English function words or more beside it (:func:`_english_around`), is no capitalised
    ordinary word, so it stays without the tagger ("a short note from sefo zvobgo").
    Spans of validated patterns (a name after "my name is", an address) and of
    the keyed index stay, and so does everything when the tagger does not read the documents.
    Rows ``lower-case-guesses``, ``lower-case-guesses.sentence-initial``,
    ``lower-case-guesses.unknown-neighbours`` and ``lower-case-guesses.unknown-names`` of
    ``benchmarks/text_rules.py``.

    Args:
        off: parts switched off, of :attr:`parts`.
    """

    name = "lower-case-guesses"
    stage = "document"
    summary = "where the tagger reads, a lower-case name that only capitalising made is no name"
    version = "3"
    parts = ("sentence-initial", "common-places", "unknown-neighbours", "unknown-names")

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        if not context.settings.tagger:
            return spans
        tagged = OverlapIndex([s for s in spans if learned(s)])
        initial, short = "sentence-initial" not in self.off, not long_text(text)
        unknown = short and "unknown-names" not in self.off
        kept = [s for s in spans if not _unconfirmed(text, s, tagged, initial, unknown)]
        if "common-places" not in self.off:
            kept = [s for s in kept if not _common_place(text, s, kept)]
        if not short or "unknown-neighbours" in self.off:
            return kept
        return [_with_unknown_neighbours(text, s, kept) for s in kept]


def _unknown_words(value: str) -> bool:
    """Two words or more, each of three letters or more that neither English (spaCy's lower-case
    vocabulary, the encoder's words: :func:`~private_vectors.text.vocabulary.known_words`), the
    common words nor the places know; never without spaCy's vocabulary (every word would be unknown)."""
    words = value.split()
    return len(words) >= 2 and bool(english_words()) and all(len(w) >= 3 and word_key(w) not in known_words()
                                                             for w in words)


def _english_around(text: str, s: Span) -> bool:
    """Two different English function words of two letters or more outside ``s``: the text is
    English ("a note from ... thanking the team"), not one whose words spaCy's vocabulary
    merely holds ("Das Wetter ist heute sehr schön", "Tack för snabbt svar")."""
    words = {w.casefold() for w in _WORD.findall(text[:s.start] + " " + text[s.end:])}
    return len({w for w in words if len(w) >= 2} & stop_words()) >= 2


def _unknown(text: str, start: int, end: int, spans: list[Span]) -> bool:
    """Whether ``text[start:end]`` is a lower-case word no vocabulary knows and no span holds."""
    word = text[start:end]
    return word.islower() and word not in encoder_words() and word not in common_words() \
        and not any(o.start < end and start < o.end for o in spans)


def _with_unknown_neighbours(text: str, s: Span, spans: list[Span]) -> Span:
    """A lower-case tagger name extended over the unknown lower-case word right after it."""
    value = text[s.start:s.end]
    if s.label != "PERSON" or not learned(s) or not value.islower() or not encoder_words():
        return s
    after = _NEXT_WORD.match(text, s.end)
    if after is None or not _unknown(text, after.start(1), after.end(1), spans):
        return s
    return Span(s.start, after.end(1), s.label, s.score, s.detector)


def _common_place(text: str, s: Span, spans: list[Span]) -> bool:
    """A lower-case, one-word place of the tagger's alone that is a common English word and no
    known city or country ("river", "station", "park")."""
    if s.label != "LOCATION" or not learned(s):
        return False
    value = text[s.start:s.end]
    if not value.isalpha() or not value.islower():
        return False
    if any(o is not s and o.start < s.end and s.start < o.end and not learned(o) for o in spans):
        return False
    return value in common_words() and value not in places() and value not in countries()


def _unconfirmed(text: str, s: Span, tagged: OverlapIndex, initial: bool, unknown: bool) -> bool:
    """A case-reading recognizer's guess in lower case (or one plain word opening a sentence) that
    no tagger span overlaps (with ``unknown``: not a name of words no vocabulary knows)."""
    if s.label not in MODEL_LABELS or learned(s) or has(s, PATTERN, DERIVED) \
            or tagged.positions(s.start, s.end):
        return False
    value = text[s.start:s.end]
    if value.islower():
        return not (unknown and s.label == "PERSON" and _unknown_words(value) and _english_around(text, s))
    word = value.casefold()
    return initial and s.label == "PERSON" and value.isalpha() and value[1:].islower() and word in plain_nouns() \
        and word not in places() and word not in countries() and sentence_initial(text, s.start)
