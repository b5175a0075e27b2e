"""In a document about no one, what identifies no one alone is kept (gene names, eponyms, study sites)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ..normalise import country_line
from ..overlap import OverlapIndex
from ..scores import SCORES
from ..shapes import overlaps, term_shaped
from ..spans import Span
from ..tags import as_words
from ..traits import GENERAL, LEARNED, MODEL, PRECISE, SHAPED, WORD_LIST, has
from ..vocabulary import countries, place_codes
from ..wordlist import plain_nouns
from .base import RuleContext, _PartedRule, alone, learned
from .person_title import TITLE_BEFORE

__all__ = ["ContextFree", "personal_context", "place_code_kept"]

_PRONOUN = re.compile(r"\bI['’](?:m|ve|d|ll)\b|\b(?:[Mm]e|[Mm]y|[Mm]ine|[Yy]ou|[Yy]our|[Yy]ours|[Hh]e|[Hh]im|[Hh]is"
                      r"|[Ss]he|[Hh]er|[Hh]ers)\b")
_ONE_WORD = (MODEL, WORD_LIST)  # recognizers whose one-word guesses are weighed (traits)
_LONG_TEXT = (*_ONE_WORD, SHAPED)  # and in long texts
_LONG_WORDS = 100
_PERSONAL = frozenset(["PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "HANDLE", "ID_NUMBER", "US_SSN", "CREDIT_CARD",
                       "IBAN_CODE", "DATE_OF_BIRTH", "MEDICAL_LICENSE", "UK_NHS"])
_WORD = re.compile(r"\w+")


def personal_context(text: str, spans: Iterable[Span], town_lines: bool = True) -> str | None:
    """Why ``text`` is about someone before any span is weighed, or None: a singular personal
    pronoun ("I'm", "my", "you", "she", "his"; not the authors' "we", nor a bare "I", also a
    numeral: "type I diabetes"), or the town line of an address block (:func:`town_line`)."""
    if _PRONOUN.search(text):
        return "a singular personal pronoun"
    if town_lines and any(s.label == "LOCATION" and town_line(text, s) for s in spans):
        return "the town line of an address block"
    return None


def town_line(text: str, s: Span) -> bool:
    """The town line of a postal address, which is contact data: a place alone on its line
    right above a country's line ("ALFRICK\\nUnited Kingdom", "Chiclana de la Frontera\\nSpain";
    :func:`~private_vectors.text.normalise.country_line`)."""
    line_end = text.find("\n", s.end)
    return line_end >= 0 and own_line(text, s) and country_line(text, line_end + 1)


def own_line(text: str, s: Span) -> bool:
    """Whether ``s`` stands alone on its line (a byline, a signature, an address block's line)."""
    line_end = text.find("\n", s.end) % (len(text) + 1)  # no line break after it: the text's end
    return not text[text.rfind("\n", 0, s.start) + 1:s.start].strip(" \t>|*•") and not text[s.end:line_end].strip()


def long_text(text: str) -> bool:
    """A text of at least 100 words. Without personal context such a text is about no one (a
    text about a person names them in full, or says "he", "her", "my" within a hundred words), so
    there a one-word name that the model and a name list agree on ("Cohen's kappa", "Werner
    syndrome", "Borg scale") and a name-list phrase ending in a plain noun ("Berg Balance Scale",
    "Mayo Clinic") are terms. A short message ("Scott is a very sympathetic person") keeps them."""
    return len(_WORD.findall(text)) >= _LONG_WORDS


def place_code_kept(text: str, on: bool = True) -> Callable[[Span], bool]:
    """Whether a span of ``text`` is a place written as a code in capitals
    (:func:`~private_vectors.text.vocabulary.place_codes`: "US", "UK", "NY") in a text under 100
    words (:func:`long_text`): the part ``place-codes`` of rules ``name-shape`` and
    ``ordinary-words`` keeps such a place. Never, in a longer text or with ``on`` false."""
    if not on or long_text(text):
        return lambda s: False
    codes = place_codes()
    return lambda s: s.label == "LOCATION" and text[s.start:s.end] in codes


class ContextFree(_PartedRule):
    """Without personal context, drop what identifies no one alone.

    Dropped: a one-word name that one model or vocabulary recognizer found (no title before it, no
    second recognizer on it, score below 0.88) and an age (in a document about no one, "aged 20-60"
    is a group's); in a text of 100 words or more (:func:`long_text`) also a country, a one-word
    name that several model and vocabulary recognizers agree on and a name-list phrase ending in a
    plain noun. In a short message a country is replaced ("Apparently Sweden is like the new
    model country", "BRAZIL CAN'T WAIT TO SEE YOU"): a post is about its writer without saying
    "I", while in abstracts the countries are study sites. Personal context, anywhere in the document:
    :func:`personal_context`, or a full name (two or more words, not all capitals, found by a name
    list, a cue or two recognizers: the model alone calls title words "Insulin Resistance" a person)
    or contact or identity data. A place after a place cue, a street and a model's boosted call
    (score at least 0.88) are always kept, and so is a one-word place other than a country (dropping
    it cost news places more than a point of recall). In scientific abstracts the one-word spans are
    gene, drug and species names ("Kras", "Concerta", "Xenopus"), eponyms ("Cohen's kappa") and the
    countries are study sites. A surname alone is still replaced where the keyed index knows it from
    a full name (index spans are not filtered here). The learned tagger's guesses are weighed apart
    from the other recognizers' (:func:`~.base.alone`), and a country it finds is dropped however
    sure it is (its probability is no cue's boost). Where the learned tagger reads the documents
    (``detector="model"``), a one-word place that only one recognizer found is dropped too in a text
    of 100 words or more (part ``one-word-places``, :func:`_unconfirmed`): spaCy's "Xenopus"
    and "Schwann", the tagger's "anaphase"; a short message ("heading to Leeds tomorrow") is about
    its writer and keeps them (dropping them there cost social-media places 6 to 8 points). With
    ``detector="rules"`` spaCy is the only reader of most places and the part does nothing (dropping
    its lone guesses cost news places 1.8 points). Part ``unsure-places``: the tagger reports a
    place from a mean tag probability of 0.4 (:data:`~private_vectors.text.scores.MODEL_THRESHOLDS`,
    for short posts); in a text of 100 words or more about no one a place it scored under 0.5 is
    dropped ("Hlabisa subdistrict" in an abstract). Part ``tagger-scores`` (version 6): the
    tagger's probability is no cue's boost for a one-word name either, so in a text of 100 words
    or more about no one a one-word name the tagger alone reports is dropped however sure it is
    ("aliskiren", "Olmesartan" in an abstract; a short post keeps it: "Pope says ..."). Part
    ``general-names`` (version 7): where the tagger reads, in a text of 100 words or more about no
    one, a name of any length that presidio alone reported, not alone on its line (a byline), is
    dropped ("Multipoint Kras", "Mut L", "BACKGROUND LDL": the tagger, a second reader, saw no name
    there). Part ``split-names`` (version 8): a one-word name the tagger reports right beside
    another name or place span of its own, one space between ("selamawit" + "egal"), is a full
    name it split in two, not a lone guess, and stays. Evidence, part by part: rows
    ``context-free.countries``, ``context-free.ages``, ``context-free.long-texts`` and
    ``context-free.town-lines`` of the current table of ``benchmarks/text_rules.py``
    (``town-lines`` changes nothing on its five corpora: a candidate to go, read there),
    ``one-word-places`` in its section on ``detector="model"``, countries in long texts only in its
    section on version 4, ``unsure-places`` in its section on version 5, ``general-names`` and
    ``split-names`` in their sections on versions 7 and 8.

    Args:
        off: parts switched off, of :attr:`parts`.
    """

    name = "context-free"
    summary = "in a document about no one, what identifies no one alone is kept"
    version = "8"
    parts = ("countries", "ages", "long-texts", "town-lines", "one-word-places", "unsure-places", "tagger-scores",
             "general-names", "split-names")

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        why = personal_context(text, spans, "town-lines" not in self.off)
        if why is not None:
            return self._kept(spans, spans, why, context, text)
        candidates = self.candidates(text, spans, context.settings.tagger)
        if not candidates:
            return spans
        dropped, near = set(candidates), OverlapIndex(spans)
        person = next((s for s in spans if s not in dropped and _personal(text, s, near)), None)
        if person is not None:
            return self._kept(spans, candidates, f"the document names someone ({person.label} at {person.start})",
                              context, text)
        return [s for s in spans if s not in dropped]

    def candidates(self, text: str, spans: list[Span], tagger: bool = False) -> list[Span]:
        """The spans dropped unless the document has personal context (``tagger``: whether the
        learned tagger read the document, see part ``one-word-places``)."""
        long = long_text(text)
        is_long = "long-texts" not in self.off and long
        recognizers, agreeing = (_LONG_TEXT, _LONG_TEXT) if is_long else (_ONE_WORD, ())
        known = countries() if "countries" not in self.off and long else frozenset()
        places = tagger and "one-word-places" not in self.off and long
        names = tagger and "general-names" not in self.off and long
        unsure = tagger and "unsure-places" not in self.off and long
        sure_is_no_cue = "tagger-scores" not in self.off and long
        near = OverlapIndex(spans)
        before = {(o.detector, o.start - 1) for o in spans if o.label in ("PERSON", "LOCATION")}
        after = {(o.detector, o.end + 1) for o in spans if o.label in ("PERSON", "LOCATION")}

        def split(s: Span) -> bool:  # part split-names: the tagger's name in two spans ("selamawit" + "egal")
            return learned(s) and "split-names" not in self.off and (
                ((s.detector, s.end) in before and text[s.end:s.end + 1] == " ")
                or ((s.detector, s.start) in after and text[s.start - 1:s.start] == " "))

        def lone(s: Span) -> bool:
            if unsure and s.label == "LOCATION" and learned(s) and s.score < SCORES.tagger:
                return True
            value = text[s.start:s.end]
            country = s.label in ("LOCATION", "PERSON") and not has(s, PRECISE) \
                and " ".join(value.casefold().split()) in known
            place = places and _unconfirmed(text, s, near)
            if (country or place) and learned(s):  # the tagger's probability is no cue's boost
                return True
            if s.score >= SCORES.place_cue and not (learned(s) and sure_is_no_cue):
                return False
            if country or place or (names and _unconfirmed(text, s, near, "PERSON", (GENERAL,), None)
                                    and not own_line(text, s)):
                return True
            if s.label == "AGE" and "ages" not in self.off:
                return True
            if is_long and s.label == "PERSON" and has(s, *_LONG_TEXT) \
                    and term_shaped(value, plain_nouns()):
                return True
            # "AMELIA_OKAFOR" (a placeholder-shaped name, read with spaces by detection) and
            # "#AmeliaOkafor" (a tag, read as its words) are two words
            return (s.label == "PERSON" and has(s, *recognizers, LEARNED)
                    and len(as_words(text, s.start, s.end).replace("_", " ").split()) == 1
                    and alone(s, spans, agreeing, near) and not TITLE_BEFORE.search(text, max(0, s.start - 8), s.start)
                    and not split(s))

        return [s for s in spans if lone(s)]

    def _kept(self, spans: list[Span], which: list[Span], why: str, context: RuleContext, text: str) -> list[Span]:
        if context.decisions is not None:
            for s in self.candidates(text, spans, context.settings.tagger) if which is spans else which:
                context.note(self.name, "kept", s, f"personal context: {why}")
        return spans


def _unconfirmed(text: str, s: Span, near: OverlapIndex, label: str = "LOCATION",
                 found_by: tuple[str, ...] = (*_ONE_WORD, LEARNED), words: int | None = 1) -> bool:
    """A one-word place guess that no second recognizer confirms: one model or vocabulary
    recognizer (spaCy's, the city list, the learned tagger) and no other one reported a place
    overlapping it (with ``label`` "PERSON", ``found_by`` GENERAL and ``words`` None: a name of
    any length that presidio alone reported, part ``general-names``). Unlike :func:`~.base.alone`,
    the learned tagger confirms a place that spaCy or the city list found and the other way round:
    the two agree on real places ("Kigali", "Tehran") and seldom err on the same word ("Xenopus",
    "Concerta", "Schwann" are spaCy's places, "anaphase", "HAART" the tagger's)."""
    return (s.label == label and has(s, *found_by)
            and (words is None or len(as_words(text, s.start, s.end).replace("_", " ").split()) == words)
            and not any(o is not s and o.detector != s.detector and o.label == label and overlaps(o, s)
                        for o in near.overlapping(s)))


def _personal(text: str, s: Span, near: OverlapIndex) -> bool:
    """Whether a span gives personal context: contact or identity data, or a full name (two or
    more words, not all capitals) that is not a model's guess alone (presidio's or the learned
    tagger's: "Kaplan Meier" is an eponym to both)."""
    if s.label != "PERSON":
        return s.label in _PERSONAL
    value = text[s.start:s.end]
    found_by = {o.detector for o in near.overlapping(s) if o.label == "PERSON" and o.start < s.end and s.start < o.end
                and learned(o) == learned(s)}
    return len(value.split()) >= 2 and not value.isupper() and (
        len(found_by) >= 2 or not has(s, GENERAL, LEARNED))
