"""Where the learned tagger reads, a name or place that only capitalising a lower-case word made is no name."""

from __future__ import annotations

from ..overlap import OverlapIndex
from ..recognizers.words import sentence_initial
from ..spans import Span
from ..traits import DERIVED, PATTERN, has
from ..vocabulary import common_words, countries, places
from ..wordlist import plain_nouns
from .base import MODEL_LABELS, RuleContext, _PartedRule, learned

__all__ = ["LowerCaseGuesses"]


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
    not a known city or country, is dropped too. Spans of validated patterns (a name after "my name is", an address) and of
    the keyed index stay, and so does everything when the tagger does not read the documents.
    Rows ``lower-case-guesses`` and ``lower-case-guesses.sentence-initial`` of
    ``benchmarks/text_rules.py``.

    Args:
        off: parts switched off, of :attr:`parts`.
    """

    name = "lower-case-guesses"
    stage = "document"
    summary = "where the tagger reads, a lower-case name that only capitalising made is no name"
    version = "2"
    parts = ("sentence-initial", "common-places")

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        if not context.settings.tagger:
            return spans
        tagged = OverlapIndex([s for s in spans if learned(s)])
        initial = "sentence-initial" not in self.off
        kept = [s for s in spans if not _unconfirmed(text, s, tagged, initial)]
        if "common-places" in self.off:
            return kept
        return [s for s in kept if not _common_place(text, s, kept)]


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


def _unconfirmed(text: str, s: Span, tagged: OverlapIndex, initial: bool) -> bool:
    """A case-reading recognizer's guess in lower case (or one plain word opening a sentence) that
    no tagger span overlaps."""
    if s.label not in MODEL_LABELS or learned(s) or has(s, PATTERN, DERIVED) \
            or tagged.positions(s.start, s.end):
        return False
    value = text[s.start:s.end]
    if value.islower():
        return True
    word = value.casefold()
    return initial and s.label == "PERSON" and value.isalpha() and value[1:].islower() and word in plain_nouns() \
        and word not in places() and word not in countries() and sentence_initial(text, s.start)
