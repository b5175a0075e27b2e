"""Word lists of first names, last names and places, and name and place spans found with them.

Names and places come from Faker's locale providers (first and last names of ~20 Latin-script
locales, countries, US states) plus a list of large cities. :func:`name_spans` finds them in a
text (the word-list recognizer, :class:`~private_vectors.text.recognizers.wordlist.WordListDetector`,
is the fallback when presidio is not installed, and :class:`~private_vectors.text.light.LightDetector`
uses them). The same lists truecase lower-case queries (``truecase``) so spaCy can see names
users type in lower case.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from functools import lru_cache

from .scores import PATTERN_SCORES
from .spans import Span
from .vocabulary import MONTHS, WEEKDAYS, encoder_words, stop_words

__all__ = ["COMMON_CAPITALISED", "name_spans", "name_words", "plain_nouns", "truecase", "word_lists"]

_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)


def _words(block: str) -> list[str]:
    return block.split()


_NAME_LOCALES = (
    "en_US", "en_GB", "en_IN", "de_DE", "fr_FR", "es_ES", "it_IT", "hu_HU", "cs_CZ", "sk_SK",
    "pt_PT", "pt_BR", "nl_NL", "pl_PL", "fi_FI", "sv_SE", "da_DK", "no_NO", "tr_TR", "ro_RO",
)

_CITIES = frozenset(_words("""
London Paris Berlin Madrid Rome Vienna Prague Budapest Warsaw Lisbon Dublin Amsterdam Brussels
Copenhagen Stockholm Oslo Helsinki Athens Istanbul Moscow Kyiv Cairo Lagos Nairobi Johannesburg
Tokyo Beijing Shanghai Seoul Delhi Mumbai Bangkok Singapore Jakarta Manila Sydney Melbourne
Auckland Toronto Montreal Vancouver Chicago Boston Seattle Houston Dallas Denver Atlanta Miami
Phoenix Philadelphia Detroit Portland Austin Nashville Baltimore Pittsburgh Cleveland Orlando
Mexico Bogota Lima Santiago Buenos Aires Caracas Havana Rio Janeiro Paulo Brasilia Montevideo
Springfield Manchester Liverpool Glasgow Edinburgh Birmingham Munich Hamburg Frankfurt Milan Naples
Barcelona Valencia Seville Lyon Marseille Zurich Geneva Dubai Tehran Baghdad Karachi Lahore Dhaka
"""))

# Capitalised words that are names in some locale but usually ordinary words in English text.
COMMON_CAPITALISED = frozenset(_words("""
The A An And But Or If In On At To Of For By With From As Is It Its This That These Those He She
We They You I My Our Your His Her Their Me Him Them Us Who What When Where Why How Which Not No Yes
All Any Some Each Every Many Much More Most Other Such Only Own Same So Than Too Very Can Will Just
Should Now Mark Bill Grant Rose Joy Hope Faith Grace
Summer Autumn Winter Spring Dawn Sky Rain Storm River Lake Hill Wood Field Stone Page Young Long
Little White Black Brown Green Gray Grey Golden Silver Gold King Queen Prince Duke Lord Judge
Major General President Senator Doctor Dr Mr Mrs Ms Miss Sir Madam Saint St Street Road Avenue
New North South East West Central United Kingdom States America American English French German
Man Woman Boy Girl Child People Person Patient Family Love Peace Art Will Rich Chase Price Cash
Bank Church House Home City Town Village County State Country World Day Night Time Year Week Month
Said Says Also Here There Then After Before Over Under Up Down Out Off Again Once Last First Next
Dear Hi Hello Thanks Thank Please Sorry Okay OK Well Good Great Best Better Big Small Free
Do Does Did Have Has Had Be Been Being Are Was Were Am Get Got Make Made Go Went See Saw Let
Cancer Diabetes Health Care Medical Hospital Clinic School University College Court Police
Christmas Easter Apple Amazon Google Microsoft Oracle Shell Ball
Democratic Republic Islands Island Federal Territory Territories Outlying Minor Virgin Holy Arab
Emirates Federated Southern Northern Western Eastern
""")) | frozenset(WEEKDAYS) | frozenset(MONTHS)

@lru_cache(maxsize=1)
def word_lists() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(first names, last names, places) from Faker providers (loaded once, lazily)."""
    first: set[str] = set()
    last: set[str] = set()
    for loc in _NAME_LOCALES:
        try:
            prov = importlib.import_module(f"faker.providers.person.{loc}").Provider
        except (ImportError, AttributeError):
            continue
        for attr in ("first_names", "first_names_male", "first_names_female"):
            first.update(str(n) for n in getattr(prov, attr, ()) or ())
        last.update(str(n) for n in getattr(prov, "last_names", ()) or ())
    places: set[str] = set(_CITIES)
    try:
        addr = importlib.import_module("faker.providers.address.en_US").Provider
        for name in list(addr.countries) + list(addr.states):
            name = str(name).split(",")[0].split("(")[0].strip()
            places.add(name)  # multi-word names ("Solomon Islands") match as whole runs only
    except (ImportError, AttributeError):
        pass
    keep = lambda s: frozenset(w for w in s if len(w) > 1 and w[0].isupper() and w not in COMMON_CAPITALISED)  # noqa: E731
    return keep(first), keep(last), keep(places)


@lru_cache(maxsize=1)
def plain_nouns() -> frozenset[str]:
    """Whole words of the packaged encoder's vocabulary that no shipped name list or surrogate
    pool knows as a name ("breast", "membrane", "pathway"; not "mark", "white", "amelia"): a
    phrase with one is no name. Empty without the packaged encoder."""
    from .surrogates import load_pool

    first, last, _ = word_lists()
    pool = load_pool()
    names = {w.casefold() for w in (*first, *last, *pool.last)} | set(pool.first_keys)
    return encoder_words() - names


def name_spans(text: str, *, detector: str = "wordlist") -> list[Span]:
    """PERSON and LOCATION spans of runs of capitalised words found in the name and place lists.

    A run of up to four adjacent capitalised words is a PERSON when it starts with a first name
    or ends with a last name (0.85), has a middle initial (0.75) or holds a listed name away from
    a sentence start (0.6); one listed place word, or a run that is a listed place, is a LOCATION.
    """
    first, last, places = word_lists()
    score = PATTERN_SCORES["wordlist"]
    words = list(_WORD.finditer(text))
    found: list[Span] = []
    i = 0
    while i < len(words):
        w = words[i].group(0)
        if not w[0].isupper() or w in COMMON_CAPITALISED:
            i += 1
            continue
        # a run of capitalised words, adjacent (only spaces between)
        j = i + 1
        while (j < len(words) and j - i < 4 and words[j].group(0)[0].isupper()
               and words[j].group(0) not in COMMON_CAPITALISED and text[words[j - 1].end():words[j].start()].strip() in ("", ".")):
            j += 1
        sentence_start = _at_sentence_start(text, words[i].start())
        if sentence_start and j - i > 1 and w not in first and w not in last:
            i += 1  # "Mail Maria Lopez …": a capitalised first word that is no name
            continue
        run = [x.group(0) for x in words[i:j]]
        start, end = words[i].start(), words[j - 1].end()
        if len(run) >= 2 and (run[0] in first or run[-1] in last):
            found.append(Span(start, end, "PERSON", score["full_name"], detector))
        elif 3 <= len(run) <= 4 and any(len(x) == 1 for x in run[1:-1]):  # "Szabina J Gelencsér"
            found.append(Span(start, end, "PERSON", score["initial"], detector))
        elif len(run) >= 2 and any(x in first or x in last for x in run) and not sentence_start:
            found.append(Span(start, end, "PERSON", score["name"], detector))
        elif len(run) == 1 and w in places:
            found.append(Span(start, end, "LOCATION", score["place_at_start" if sentence_start else "place"], detector))
        elif len(run) == 1 and (w in first or w in last) and not sentence_start:
            found.append(Span(start, end, "PERSON", score["name"], detector))
        elif len(run) >= 2 and " ".join(run) in places:
            found.append(Span(start, end, "LOCATION", score["place"], detector))
        i = j
    return found


def _at_sentence_start(text: str, pos: int) -> bool:
    before = text[:pos].rstrip()
    return not before or before[-1] in ".!?:\"'(\n"




@lru_cache(maxsize=1)
def name_words() -> tuple[frozenset[str], frozenset[str]]:
    """(casefolded first/last names, casefolded places) minus common English words."""
    first, last, places = word_lists()
    stop = {w.casefold() for w in COMMON_CAPITALISED} | stop_words()
    names = frozenset(w.casefold() for w in first | last) - stop
    return names, frozenset(w.casefold() for w in places) - stop


def truecase(text: str, keep: Callable[[str], bool] | None = None) -> str:
    """``text`` with lower-case words that are known names or places capitalised (same length).

    spaCy's small model finds no entity in "what do the records say about amelia okafor";
    it finds PERSON in "... about Amelia Okafor". Only whole lower-case words from the name
    and place lists change, so offsets are preserved. ``keep(word)`` true leaves a word as it
    is (a Sanitizer passes the words its documents write in lower case: "gene", "will").
    """
    names, places = name_words()
    chars = list(text)
    for m in _WORD.finditer(text):
        w = m.group(0)
        if w.islower() and (w in names or w in places) and not (keep is not None and keep(w)):
            cap = w[0].upper()
            if len(cap) == 1:
                chars[m.start()] = cap
    return "".join(chars)
