"""Places from the shipped city pool and a country list, streets by their type word, places after a cue.

:class:`PlaceDetector` finds 1–3 capitalised (or upper-case) words that are a city of the
surrogate pool or a country (Faker's en_US country list), minus common English words; a place
that is also a first name ("Florence") only after "in", "from", "to", "at" or "near". Places
right after a place cue ("moved here from", "flew to", "based in") and upper-case words of five
letters or more after "in", "to", "from", "near" count too. It also reports street names by their
last word — an English street type that is rarely a surname ("Alexander Flat", "King Forges")
or a compound street word ("Skoanveien", "Parijsstraat") — with a score above the name
recognizers', so a street named after a person stays a place. A place after a strong cue also
outranks a model's PERSON ("flew to Coles"); a country takes its postcode ("Estonia 62488");
the line right above a country line in an address block is its town.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..scores import SCORES, score_param
from ..spans import Span, validate_texts
from ..traits import WORD_LIST
from ..vocabulary import (
    PARTICLES,
    UPPER_LETTERS,
    common_words,
    countries,
    digest,
    first_names,
    function_words,
    places,
    word_key,
)
from .base import Recognizer
from .words import LINE, TOKEN, capitalised, place_case

__all__ = ["PlaceDetector"]

_PLACE_CUES = frozenset(["in", "from", "to", "at", "near", "of"])
# street types: street suffix names of USPS Publication 28, Appendix C1, that are rarely
# surnames; "Lane", "Hill", "Ford" are left out (benchmarks/fitted_patterns.py)
_STREET_TYPES = frozenset(["alley", "avenue", "ave", "boulevard", "blvd", "bypass", "canyon", "causeway", "circle", "circles", "court", "courts", "crescent", "crossing", "crossroad", "drive", "drives", "expressway", "extension", "extensions", "falls", "flat", "flats", "forge", "forges", "freeway", "garden", "gardens", "gateway", "groves", "harbor", "harbors", "heights", "highway", "hollow", "inlet", "islands", "isle", "junction", "junctions", "keys", "knolls", "lakes", "landing", "loop", "manor", "manors", "meadow", "meadows", "mews", "motorway", "mountains", "overpass", "parkway", "parkways", "passage", "pines", "place", "plains", "plaza", "points", "ports", "prairie", "radial", "ramp", "rapids", "ridges", "river", "road", "roads", "route", "row", "shoals", "shores", "skyway", "square", "squares", "station", "stravenue", "street", "streets", "terrace", "throughway", "trafficway", "trail", "tunnel", "turnpike", "underpass", "valley", "valleys", "viaduct", "views", "villages", "walk", "walks", "way", "ways",
                           "fork", "forks", "dam", "creek", "cove", "coves", "estates", "orchard", "ranch", "ridge", "spur", "spurs", "vista", "crest", "glen", "glens", "knoll", "oval"])
_PLACE_AFTER_CUE = re.compile(
    rf"\b(?:[Mm]oved (?:here |back )?(?:to|from)|[Ll]ives? in|[Ll]iving in|[Bb]orn in|[Bb]ased in|[Ll]ocated in|"
    rf"[Ff]lew (?:to|from|in)|[Tt]rip to|[Hh]ome (?:city|town)(?: is| of)?|Where:|I am in|I'm in|I’m in|[Rr]eturned to|"
    rf"[Aa]rrived (?:at|in)|[Mm]eet (?:me )?in|[Oo]riginally from|[Gg]rew up in)\s+([{UPPER_LETTERS}][\w'’-]+(?:[ \t](?:[{UPPER_LETTERS}][\w'’-]+|(?:de|del|la|le)\b)){{0,3}})")
# an upper-case word of five letters or more after in/to/from/near: "I am in ΛΕΥΚΩΣΙΑ", "based in ESPOO"
_CAPS_PLACE = re.compile(rf"\b(?:in|to|from|near)\s+([{UPPER_LETTERS}]{{5,}}(?:[ \t-][{UPPER_LETTERS}]{{2,}}){{0,2}})\b")
_POSTCODE = re.compile(r"[ \t]+\d{5,6}\b(?![.,]?\d)")  # five or six digits: a 4-digit number is a year as often
_COMPOUND_STREET = re.compile(r"(?:straat|strasse|straße|gasse|vej|veien|vegen|vägen|gatan|gata|gade|katu|tie|weg|"
                              r"laan|plein|allee|dreef|utca|ulica)$", re.IGNORECASE)


_TOWN_LINE = re.compile(rf"[{UPPER_LETTERS}][\w'’.()-]*(?:[ \t]+(?:[{UPPER_LETTERS}][\w'’.()-]*|{'|'.join(sorted(PARTICLES))})){{0,3}}")


class PlaceDetector(Recognizer):
    """LOCATION spans from the shipped city pool and a country list (see the module docstring).

    Args:
        score: the score of a city or country (below presidio's 0.85).
        street_score: the score of a street name (above the name recognizer's full-name score).
        cue_score: the score of a place after a place cue ("moved here from").
        caps_score: the score of an upper-case word after "in", "to", "from", "near" (default:
            ``score``; "in PURSUIT" is often an acronym).
    """

    kind = "places"
    name = "places"
    traits = frozenset([WORD_LIST])
    version = "6"
    entities = ("LOCATION",)

    def __init__(self, *, score: float = SCORES.place, street_score: float = SCORES.street,
                 cue_score: float = SCORES.place_cue,
                 caps_score: float | None = None) -> None:
        self.score = score_param("score", score)
        self.street_score = score_param("street_score", street_score)
        self.cue_score = score_param("cue_score", cue_score)
        self.caps_score = self.score if caps_score is None else score_param("caps_score", caps_score)

    def __repr__(self) -> str:
        return (f"PlaceDetector(score={self.score}, street_score={self.street_score}, cue_score={self.cue_score}, "
                f"caps_score={self.caps_score})")

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """LOCATION spans per text."""
        known, firsts = places(), first_names()
        return [self._one(t, known, firsts) for t in validate_texts(texts)]

    def _one(self, text: str, known: frozenset[str], firsts: frozenset[str]) -> list[Span]:
        words = list(TOKEN.finditer(text))
        out: list[Span] = self._streets(text, words) + self._cued(text) + self._above_country(text)
        i = 0
        while i < len(words):
            hit = 0
            for n in (3, 2, 1):
                if i + n > len(words) or not all(place_case(w.group(0)) for w in (words[i], words[i + n - 1])):
                    continue
                a, b = words[i].start(), words[i + n - 1].end()
                if "\n" in text[a:b]:
                    continue
                key = " ".join(word_key(text[a:b]).split())
                if key not in known:
                    continue
                if n == 1 and key in firsts and (i == 0 or words[i - 1].group(0).casefold() not in _PLACE_CUES):
                    continue
                if text[b:b + 1] == ":":  # a field label ("Mobile: 0490 ..."), not the city
                    continue
                post = _POSTCODE.match(text, b)  # "Estonia 62488": the postcode belongs to the place
                out.append(Span(a, post.end() if post else b, "LOCATION", self.score, self.name))
                hit = n
                break
            i += hit or 1
        best: dict[tuple[int, int], Span] = {}
        for sp in out:  # one span per extent, the best scored (a cued city is also a known one)
            if (sp.start, sp.end) not in best or sp.score > best[sp.start, sp.end].score:
                best[sp.start, sp.end] = sp
        return sorted(best.values(), key=lambda sp: (sp.start, sp.end))

    def _above_country(self, text: str) -> list[Span]:
        """The town line of an address block: a line of capitalised words right above a line that is
        a country ("ALFRICK\\nUnited Kingdom", "Chiclana de la Frontera\\n\\nSpain 61709")."""
        if "\n" not in text:
            return []
        known_countries, common = countries(), common_words()
        lines = [(m.start(1), m.end(1), m.group(1)) for m in LINE.finditer(text)]
        out = []
        previous: tuple[int, int, str] | None = None
        for a, b, line in lines:
            if not line:
                continue
            post = _POSTCODE.search(line)
            country = line[:post.start()] if post and post.end() == len(line) else line
            if previous is not None and " ".join(country.casefold().split()) in known_countries \
                    and _TOWN_LINE.fullmatch(previous[2]) and word_key(previous[2].split()[0]) not in common:
                out.append(Span(previous[0], previous[1], "LOCATION", self.score, self.name))
            previous = (a, b, line)
        return out

    def _cued(self, text: str) -> list[Span]:
        """Places after a place cue ("moved here from Tjæreborg", "flew to LEPPEN"), and upper-case
        words after "in", "to", "from", "near" (scored ``caps_score``: "in PURSUIT" is often an acronym)."""
        found = [(m, self.cue_score) for m in _PLACE_AFTER_CUE.finditer(text)]
        if not text.isupper():
            found += [(m, self.caps_score) for m in _CAPS_PLACE.finditer(text)]
        stop = function_words()  # "I'm in The ...", "flew to Monday": not a place; "moved to New York" is
        return [Span(m.start(1), m.end(1), "LOCATION", score, self.name) for m, score in found
                if word_key(m.group(1).split()[0]) not in stop]

    def _streets(self, text: str, words: list[re.Match[str]]) -> list[Span]:
        out = []
        for j, w in enumerate(words):
            word = w.group(0)
            if not capitalised(word):
                continue
            if _COMPOUND_STREET.search(word) and len(word) > 6:
                out.append(Span(w.start(), w.end(), "LOCATION", self.street_score, self.name))
            elif word.casefold() in _STREET_TYPES and j > 0:
                i = j
                while i > 0 and j - i < 3 and capitalised(words[i - 1].group(0)) \
                        and text[words[i - 1].end():words[i].start()] == " ":
                    i -= 1
                if i < j:
                    out.append(Span(words[i].start(), w.end(), "LOCATION", self.street_score, self.name))
        return out

    def get_config(self) -> dict[str, Any]:
        from ..surrogates import load_pool

        return {"type": self.kind, "version": self.version, "street_score": self.street_score, "score": self.score,
                "cue_score": self.cue_score, "caps_score": self.caps_score,
                "vocabulary": {"pool": load_pool().describe(), "places": len(places()), "sha256": digest(places())}}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PlaceDetector:
        return cls(score=config.get("score", SCORES.place), street_score=config.get("street_score", SCORES.street),
                   cue_score=config.get("cue_score", SCORES.place_cue), caps_score=config.get("caps_score"))
