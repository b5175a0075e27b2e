"""Regular-expression detectors: fast and precise for structured identifiers.

E-mail, phone, credit card (Luhn-checked), IBAN (mod-97-checked), US SSN, IP address,
URL/domain, dates, street and military postal addresses (with their city/region/country/postcode
lines; streets whose type word comes first, "Rua Diadema 1903"; post-office boxes; "the corner
of X and Y") and person names after a cue ("my name is", a form of address, "Name:", "maiden
name is", ...): the project's one name-cue list. Street addresses are labelled LOCATION.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..scores import PATTERN_SCORES
from ..spans import Span, check_labels, validate_texts
from ..traits import PATTERN, PRECISE
from ..vocabulary import HONORIFIC, MONTH, PARTICLES, UPPER_LETTERS, stop_words
from .base import Recognizer
from .numbers import _YEAR, card_evidence, luhn_ok, phone_evidence, phone_ok

__all__ = ["EMAIL", "REGEX_LABELS", "RegexDetector", "cue_name_spans", "iban_ok", "in_code", "luhn_ok", "phone_ok",
           "structured_matches"]
_S = PATTERN_SCORES["regex"]

# structured identifiers: e-mail, URL/domain, card, US SSN, IBAN, IP, date, phone, street
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_URL = re.compile(r"\b(?:https?://|www\.)[^\s]+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|edu|gov|io|info|biz|co|de|uk|fr|es|it|nl|hu|cz|gl|pt|br|ru|cn|jp)\b",
                  re.IGNORECASE)
_PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ \t.-]?)?(?:\([ \t]?\d{1,5}[ \t]?\)[ \t.-]?\d{2,8}(?:[ \t.-]\d{2,8}){0,3}"
                    r"|\d{2,4}(?:[ \t.-]\d{2,8}){1,4})"
                    r"(?:\s?(?:x|ext\.?)\s?\d{1,5})?(?![\w])"
                    r"|(?<![\w+])\+?\d{10,13}(?!\w)")
_EXTENSION = re.compile(r"\s?(?:x|ext\.?)\s?\d{1,5}$")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_SSN = re.compile(r"(?<!\d)(?!000|666|9\d\d)\d{3}[- ](?!00)\d{2}[- ](?!0000)\d{4}(?!\d)")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b")
_IPV4 = re.compile(r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\d.])")
_IPV6 = re.compile(r"\b(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}\b")
_DATE = re.compile(r"\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b|\b\d{4}-\d{2}-\d{2}\b"
                   rf"|\b{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{MONTH}\s+\d{{4}}\b")
# a house number, capitalised name words and a street type (in any case: "15 ELM STREET"), on one line
_STREET = re.compile(r"(?<![\d.,/-])\b\d{1,6}[a-zA-Z]?[ \t]+(?:[A-Z][\w'.-]*[ \t]+){1,4}"
                     r"(?:(?i:(?:Street|Road|Avenue|Boulevard|Lane|Drive|Court|Place|Way|Terrace|Circle|Highway|Parkway"
                     r"|Square|Katu|Straße|Strasse|Gasse)\b|(?:St|Rd|Ave|Blvd|Ln|Dr|Ct|Pl|Hwy|Sq)\b\.?)"
                     r"|(?:Streets|Roads|Drives|Courts|Lanes|Squares|Alley|Bypass|Causeway|Creek|Crescent|Crossing|Estates"
                     r"|Expressway|Ferry|Freeway|Gardens|Grove|Groves|Heights|Hollow|Junction|Knoll|Knolls|Landing|Loop"
                     r"|Manor|Manors|Meadows|Mews|Orchard|Overpass|Pike|Plaza|Point|Radial|Rapids|Ridge|Ridges|Rue|Shoals"
                     r"|Shores|Skyway|Springs|Stravenue|Summit|Throughway|Trace|Trafficway|Trail|Tunnel|Turnpike"
                     r"|Underpass|Valley|Valleys|Viaduct|Vista|Plains|Mall|Crest|Cove|Coves)\b)"
                     r"(?:,?\s+(?:Apt|Suite|Unit)\.?\s*\d+)?")
# the same in lower case ("15 elm street", "221b baker street", "1600 pennsylvania avenue"), its name
# words neither function words nor measures ("20 miles down the road", "3 best road trips": see
# _lower_street_ok), with the street types a sentence seldom uses otherwise
_STREET_LOWER = re.compile(r"(?<![\w.,/-])\d{1,5}[a-z]?[ \t]+(?:\d{1,5}[ \t]+)?(?P<words>(?:[a-z][a-z'’-]*[ \t]+){1,3})"
                           r"(?:street|st|road|rd|avenue|ave|boulevard|blvd|lane|ln|drive|terrace|crescent|highway|hwy"
                           r"|parkway|way|straße|strasse|gasse)\b\.?(?:,?[ \t]+(?:apt|suite|unit)\.?[ \t]*\d+)?")
# a continental street compound and its house number ("Hauptstraße 5", "Bahnhofstr. 12", "Søndergade 52";
# in lower case with the endings no English word has: "hersnapvej 18")
_COMPOUND_STREET = re.compile(rf"\b(?:[{UPPER_LETTERS}][\w'’-]*?(?i:straße|strasse|str\.|gasse|weg|platz|allee|damm|ufer|"
                              r"straat|laan|plein|gracht|singel|kade|dijk|steeg|gatan|vägen|vej|gade|veien|katu)"
                              r"|[^\W\d_A-Z][\w'’-]+?(?:straße|strasse|gasse|weg|platz|allee|straat|laan|plein|gracht|gatan|"
                              r"vägen|vej|veien|katu))[ \t]+(?!(?:18|19|20)\d\d\b)\d{1,4}[a-zA-Z]?(?:[-/]\d{1,4}[a-zA-Z]?)?\b")
# a French street: its number, a comma, the type word in lower case ("95, boulevard de Duval", "50, rue Nicolas")
_FRENCH_STREET = re.compile(rf"\b\d{{1,4}}(?:[ \t]?(?:bis|ter))?,?[ \t]+(?:rue|boulevard|avenue|chemin|allée|impasse|place|quai|"
                            rf"route|cours)[ \t]+(?:(?:de|du|des|la|le)[ \t]+|[ld]['’])?[{UPPER_LETTERS}][\w'’-]*"
                            rf"(?:[ \t]+[{UPPER_LETTERS}][\w'’-]*){{0,3}}")
# a street whose type word comes first, in lower case, with its house number ("106 rúa olmos 44", "calle mayor 3")
_TYPE_FIRST_LOWER = re.compile(r"\b(?:rue|rua|rúa|calle|avenida|avda\.|carrer|strada|piazza|ulica|ul\.)[ \t]+"
                               r"(?:[^\W\d_A-Z][\w'’.-]*[ \t]+){1,3}\d{1,4}[a-z]?\b")
_WEEKDAY = r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day"
# a venue after "at" or "@" and before a time ("at The Echo tonight", "@ Glover Park on Saturday"):
# where someone will be
_VENUE = re.compile(rf"(?:\b[Aa]t|@)[ \t]+(?P<v>(?:[Tt]he[ \t]+)?(?!{MONTH}\b)(?!{_WEEKDAY}\b)[{UPPER_LETTERS}][\w'’&-]*"
                    rf"(?:[ \t]+[{UPPER_LETTERS}][\w'’&-]*){{0,3}})(?=[ \t]+(?:tonight|tonite|today|tomorrow|this[ \t]+"
                    rf"(?:weekend|evening|morning|afternoon)|on[ \t]+{_WEEKDAY})\b)")
_MEASURES = frozenset(["mile", "miles", "km", "kilometres", "kilometers", "metres", "meters", "yards", "feet", "blocks",
                       "block", "minutes", "minute", "hours", "hour", "times", "lanes", "streets", "roads", "doors",
                       "houses", "steps", "stops", "exits", "best", "worst", "new", "old", "long", "wrong", "right",
                       "left", "open", "closed", "busy", "quiet", "main-road", "way", "ways", "days", "weeks", "years"])
# continental style: "<postcode> Puruntie 82", "Rua do Arenque 1634"; and lone "Apt. 595"
# on one line (or with its unit on the next: "119 Nino Point\n Apt. 658"), not the decimals or
# thousands of a figure ("+0.237", "35,000 September 97")
_STREET_EU = re.compile(r"(?<![\d.,])\b\d{3,6}[ \t]+[A-Z][\w'’.-]+(?:(?:[ \t]+|\s*\n\s*(?=(?:Apt|Suite|Unit)\b))[\w'’.-]+)"
                        r"{0,3}?[ \t]+\d{1,5}\b"
                        r"|\b(?:Apt|Suite|Unit)\.?\s*\d+\b")


def iban_ok(text: str) -> bool:
    """Whether an IBAN passes the ISO 13616 mod-97 check (ISO 7064)."""
    s = text.replace(" ", "")
    if not 15 <= len(s) <= 34:
        return False
    moved = s[4:] + s[:4]
    try:
        number = int("".join(str(int(c, 36)) for c in moved))
    except ValueError:
        return False
    return number % 97 == 1


def structured_matches(text: str) -> Iterator[tuple[str, re.Match[str], float]]:
    """(label, match, score) for every structured identifier the project's regexes find: e-mail,
    URL, card (Luhn-checked and written as cards are, :func:`~.numbers.card_evidence`), US SSN,
    IBAN (mod-97 checked), IPv4/IPv6, date, phone (not a date, not joined to a longer code,
    possible by :func:`phone_ok`, with the evidence of :func:`~.numbers.phone_evidence`)."""
    for m in EMAIL.finditer(text):
        yield "EMAIL_ADDRESS", m, _S["email"]
    for m in _URL.finditer(text):
        yield "URL", m, _S["url"]
    cards = []
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and luhn_ok(digits) and card_evidence(text, m.start(), m.end()):
            cards.append((m.start(), m.end()))
            yield "CREDIT_CARD", m, _S["card"]
    for m in _SSN.finditer(text):
        yield "US_SSN", m, _S["ssn"]
    for m in _IBAN.finditer(text):
        if iban_ok(m.group(0)):
            yield "IBAN_CODE", m, _S["iban"]
    for pattern in (_IPV4, _IPV6):
        for m in pattern.finditer(text):
            yield "IP_ADDRESS", m, _S["ip"]
    for m in _DATE.finditer(text):
        yield "DATE_TIME", m, _S["date"]
    for m in _PHONE.finditer(text):
        digits = re.sub(r"\D", "", _EXTENSION.sub("", m.group(0)))
        if _DATE.fullmatch(m.group(0).strip()) or re.match(r"\d{4}-\d{2}-\d{2}\b", m.group(0)) \
                or any(a <= m.start() and m.end() <= b for a, b in cards):
            continue  # 2020-01-02, 12/03/1980, "2003-08-28 12:13": a date; a card number: no phone
        if 7 <= len(digits) <= 15 and not re.fullmatch(r"\d{4}", m.group(0).strip()) \
                and phone_ok(m.group(0)) and not in_code(text, m.start(), m.end()) \
                and phone_evidence(text, m.start(), m.end()):
            yield "PHONE_NUMBER", m, _S["phone"] if len(digits) >= 9 else _S["short_phone"]


_CODE_BEFORE = re.compile(r"[^\W_][-/]$")
_CODE_AFTER = re.compile(r"-\d|/[^\W_]")


def in_code(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is joined by a hyphen or slash to letters or digits around it:
    part of a longer code ("doi:10.1007/s12551-010-0034-3", "CK-0944636"), not a phone number."""
    return bool(_CODE_BEFORE.search(text, max(0, start - 2), start) or _CODE_AFTER.match(text, end))


# US military postal addresses as USPS Publication 28 (section 225) writes them: a PSC, CMR or
# Unit number and a box, or a ship, then APO/FPO/DPO, AA/AE/AP and a ZIP code
# (benchmarks/fitted_patterns.py)
_MILITARY = re.compile(r"\b(?:(?:PSC|CMR|Unit) \d{3,5},? Box \d{3,5}|US(?:NS|NV|S|CGC) [A-Z][\w'’-]+)"
                       r"\s*\n?\s*(?:APO|FPO|DPO) (?:AA|AE|AP) \d{5}\b", re.IGNORECASE)
_TAIL_PARTICLES = ("de", "la", "del", "di", "du", "van", "von")  # of PARTICLES, those an address line may hold
_PARTICLE = rf"(?:{'|'.join(_TAIL_PARTICLES)})"


def _tail_pattern() -> re.Pattern[str]:
    """The address tail after a street: more address lines (city, region, country, postcode) or,
    after "Suite 9" / "Apt. 615", up to four capitalised words on the same line ("Moosleerau
    Switzerland")."""
    word = (rf"(?:(?:Suite|Apt|Unit)\.?\s*\d+|[{UPPER_LETTERS}][\w'’.()-]*+(?!:)(?:[ \t]+(?:[{UPPER_LETTERS}(][\w'’.()-]*"
            rf"|\d{{2,6}}|{_PARTICLE})){{0,3}}|\d{{2,6}})")
    line = rf"[ \t]*(?:\n[ \t>?*•|]*,?|,)[ \t]*{word}(?:[ \t]+\d{{4,6}})?"
    same_line = rf"(?:[ \t]+(?:Suite|Apt|Unit)\.?\s*\d+)+(?:[ \t]+[{UPPER_LETTERS}][\w'’.()-]*){{0,4}}"
    return re.compile(rf"(?:{line})+|{same_line}(?:{line})*")


_TAIL = _tail_pattern()
_ENDS_WITH_UNIT = re.compile(r"(?:Suite|Apt|Unit)\.?\s*\d+$")
_WORDS_AFTER_UNIT = re.compile(rf"(?:[ \t]+[{UPPER_LETTERS}][\w'’.()-]*){{1,4}}")
# "the corner of <street> and <street>"; "lives on <Name Street> <number>" (European order)
# the whole phrase is the address: "the corner of" names the place as much as the two streets do
_CORNER = re.compile(r"\b(?:the[ \t]+)?corner of (?:[\w'’.-]+[ \t]+){0,4}?[\w'’.-]+? and (?:[\w'’.-]+[ \t]+){0,4}?[\w'’.-]+?"
                     r"(?=[ \t]*(?:[?.,;!\n]|$))", re.IGNORECASE)
_STREET_PARTICLE = rf"(?:{'|'.join(PARTICLES)}|ul\.)"  # "ul.": ulica, a Polish street
# "73111 31 Seneca Place 5", "772 ul. Narewska 94", "10252 Μεγάλη Άμμος 184": number, name words, number
# a capitalised function word is a title's ("5 Musicians Of The 70s"), not a street's
_TITLE_WORD = r"(?:Of|The|And|For|In|On|To|At|By|With|From|A|An)\b"
_NUM_STREET = re.compile(rf"(?<![\d.,-])\b\d{{1,6}}[ \t]+(?:\d{{1,5}}[ \t]+)?(?:ul\.[ \t]+)?(?!{MONTH}\b)(?!{_TITLE_WORD})"
                         rf"[{UPPER_LETTERS}][\w'’.-]*(?:[ \t]+(?:(?!{_TITLE_WORD})[{UPPER_LETTERS}][\w'’.-]*|{_STREET_PARTICLE})){{0,3}}"
                         rf"[ \t]+\d{{1,5}}[A-Za-z]?\b")
# a postal number or secondary address written before the street ("73111 31 Seneca Place", "Apt. 117 5720 ...")
_HEAD = re.compile(r"(?:(?:Suite|Apt|Unit)\.?[ \t]*\d+[ \t]+)?\d{3,6}[ \t]+$|(?:Flat|Studio|Apartment)[ \t]+$")
_ON_STREET = re.compile(rf"\b(?:[Ll]ives?|[Ll]iving|[Ll]ocated|[Ss]tation is|[Ss]ituated|[Mm]oved) (?:on|at|to) "
                        rf"((?:\d{{1,6}}[ \t]+)?(?:(?:[{UPPER_LETTERS}][\w'’.-]*|{_STREET_PARTICLE})[ \t]+){{1,5}}\d{{1,5}}[A-Za-z]?)\b")
# a post-office box ("P.O. Box 149", "PO Box 242") and a street whose type word comes first, as in
# Romance languages ("Rue Ibn El-Jazzar", "Rua Diadema 1903", "Avda. Rio Nalon 58", "Via dei Fiorentini 17")
_PO_BOX = re.compile(r"\bP\.?[ \t]?O\.?[ \t]+Box[ \t]+\d{1,6}\b")
_TYPE_FIRST = re.compile(rf"\b(?:Rue|Rua|Via|Viale|Calle|Avenida|Avda\.|Av\.|Rambla|Paseo|Praça|Largo|Travessa|"
                         rf"Estrada|Carrer|Strada|Piazza|Corso|Boulevard|Chemin|Allée|Place)[ \t]+"
                         rf"(?:{_STREET_PARTICLE}[ \t]+)?[{UPPER_LETTERS}][\w'’.-]*"
                         rf"(?:[ \t]+(?:[{UPPER_LETTERS}][\w'’.-]*|{_STREET_PARTICLE})){{0,3}}(?:[ \t]+\d{{1,5}}[A-Za-z]?\b)?")
_NAME_CUE = re.compile(r"(?:\b(?:[Mm]y name is|[Nn]amed|[Cc]alled|" + HONORIFIC + r"\.?|"
                       r"(?:[Mm]aiden|[Ll]ast|[Ff]irst|[Ff]amily) name(?: is|\?|:)|(?:[Pp]eople|[Ee]veryone) calls? me|"
                       r"[Ss]ays)|"
                       r"(?:^|(?<=[\n|>]))[ \t]*(?:Full )?[Nn]ame:)[ \t]+"
                       rf"([{UPPER_LETTERS}][\w'’-]+(?:[ \t]+[{UPPER_LETTERS}]\.?(?!\w))?(?:[ \t]+[{UPPER_LETTERS}][\w'’-]+)?)")
_CUE_STOP = frozenset(["The", "A", "An", "And", "But", "Or", "In", "On", "At", "To", "Of", "For", "By", "With", "From", "As", "Is", "It", "This", "That"])

def cue_name_spans(text: str, *, detector: str = "regex") -> list[Span]:
    """PERSON spans for the words after a name cue ("my name is", "Mr", "Dr", "Name:", ...),
    shaped like a name: no digit, not one word in capitals ("a protein called FIP-2", "a
    syndrome called APECED")."""
    return [Span(m.start(1), m.end(1), "PERSON", _S["name_cue"], detector) for m in _NAME_CUE.finditer(text)
            if m.group(1).split()[0] not in _CUE_STOP and _cue_name_shaped(m.group(1))]


def _cue_name_shaped(value: str) -> bool:
    return not any(c.isdigit() for c in value) and not (len(value.split()) == 1 and value.isupper())


REGEX_LABELS: tuple[str, ...] = (
    "PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS", "URL",
    "DATE_TIME", "LOCATION",
)
"""Labels the regex detector can emit (street addresses come out as LOCATION)."""

_DEFAULT_LABELS = tuple(x for x in REGEX_LABELS if x not in ("URL", "DATE_TIME"))


def _with_tail(text: str, start: int, end: int) -> tuple[int, int]:
    """Extend a street match over the following address lines (city, region code, country, postcode)."""
    if _ENDS_WITH_UNIT.search(text, start, end):
        words = _WORDS_AFTER_UNIT.match(text, end)
        end = words.end() if words else end
    m = _TAIL.match(text, end)
    head = _HEAD.search(text, max(0, start - 24), start)
    return (head.start() if head else start, m.end() if m else end)


def _lower_street_ok(m: re.Match[str]) -> bool:
    """A lower-case street's name words are neither function words nor measures: "15 elm street",
    not "20 miles down the road"."""
    words = m.group("words").split()
    return not any(w in stop_words() or w in _MEASURES for w in words)


def _in_sentence(value: str) -> bool:
    """Whether a continental-style address match has an English function word between its numbers
    ("115 PAD patients and 116"): a count in a sentence, not a postcode, street and number
    (particles of street names, "do", "de", "van", do not count)."""
    return any(w.casefold() in stop_words() and w.casefold() not in PARTICLES for w in value.split()[1:-1])


_NAME_BEFORE = re.compile(rf"[{UPPER_LETTERS}][\w'’.&-]*[ \t]+$")
_UNIT_WORD = re.compile(r"(?:Apt|Suite|Unit|Box|Flat|No|Nr|Postcode|Zip|PLZ)\.?[ \t]+$", re.IGNORECASE)
_UNIT_INSIDE = re.compile(r"\b(?:Apt|Suite|Unit|Box|Flat)\b")
_SHORT_NUMBER = re.compile(r"\d{1,3}(?!\d)")
_MORE_NUMBERS = re.compile(r"[ \t]+\d{1,3}(?:[ \t]|$)", re.MULTILINE)


def score_line(text: str, start: int, end: int) -> bool:
    """Whether a number-name-number match ``text[start:end]`` is a result ("Pohang 3 Ulsan 2",
    "Japan 2 Syria 1", "DETROIT 4 Kansas City 1", "287 Ian Woosnam 70 76 71 70"): more short
    numbers follow it (a player's rounds), or its first number has at most three digits and
    follows a capitalised word on the same line, as a score follows its team, and no unit word
    ("Apt", "Suite") is inside it. In an address the first number is a postcode or follows a cue,
    a comma, a unit word ("Apt. 675") or the start of the line; a street name before a house
    number ("Συγγρού 119 Nino Point Apt. 658") carries its unit. A score never joins a place span."""
    if _MORE_NUMBERS.match(text, end):
        return True
    before = text[max(0, start - 40):start]
    return bool(_NAME_BEFORE.search(before)) and not _UNIT_WORD.search(before) \
        and bool(_SHORT_NUMBER.match(text, start)) and not _UNIT_INSIDE.search(text, start, end)


def _find(text: str, wanted: frozenset[str]) -> list[Span]:
    found: list[Span] = []
    name = "regex"

    def add(label: str, m: re.Match[str], score: float) -> None:
        if label in wanted:
            found.append(Span(m.start(), m.end(), label, score, name))

    for label, m, score in structured_matches(text):
        add(label, m, score)
    if "LOCATION" in wanted:
        for pattern, score in ((_STREET, _S["street"]), (_STREET_EU, _S["street_eu"]), (_MILITARY, _S["military"]),
                               (_NUM_STREET, _S["num_street"]), (_PO_BOX, _S["po_box"]), (_TYPE_FIRST, _S["type_first"])):
            for m in pattern.finditer(text):
                if pattern is _STREET_EU and _in_sentence(m.group(0)) or \
                        pattern in (_STREET_EU, _NUM_STREET) and m.group(0)[0].isdigit() and score_line(text, m.start(), m.end()):
                    continue
                a, b = _with_tail(text, m.start(), m.end())
                found.append(Span(a, b, "LOCATION", score, name))
        for m in (*_COMPOUND_STREET.finditer(text), *_TYPE_FIRST_LOWER.finditer(text), *_FRENCH_STREET.finditer(text)):
            a, b = _with_tail(text, m.start(), m.end())
            found.append(Span(a, b, "LOCATION", _S["compound_street"], name))
        for m in _STREET_LOWER.finditer(text):
            if _lower_street_ok(m):
                a, b = _with_tail(text, m.start(), m.end())
                found.append(Span(a, b, "LOCATION", _S["lower_street"], name))
        for m in _VENUE.finditer(text):
            found.append(Span(m.start("v"), m.end("v"), "LOCATION", _S["venue"], name))
        for m in _CORNER.finditer(text):
            found.append(Span(m.start(), m.end(), "LOCATION", _S["corner"], name))
        for m in _ON_STREET.finditer(text):
            a, b = _with_tail(text, m.start(1), m.end(1))
            found.append(Span(a, b, "LOCATION", _S["on_street"], name))
    if "PERSON" in wanted:
        found.extend(cue_name_spans(text))
    return found


class RegexDetector(Recognizer):
    """The project's regexes as a recognizer.

    Args:
        entities: labels to report, from :data:`REGEX_LABELS` (default: all but URL and
            DATE_TIME, which are common in ordinary text).
    """

    kind = "regex"
    name = "regex"
    traits = frozenset([PATTERN, PRECISE])
    version = "7"

    def __init__(self, *, entities: Sequence[str] | None = None) -> None:
        labels = check_labels(entities, REGEX_LABELS, _DEFAULT_LABELS)
        self.entities = labels
        self._wanted = frozenset(labels)

    def __repr__(self) -> str:
        return f"RegexDetector(entities={list(self.entities)})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """Spans per text (overlaps not resolved: the text stage merges)."""
        return [_find(t, self._wanted) for t in validate_texts(texts)]

    def get_config(self) -> dict[str, Any]:
        return {"type": self.kind, "version": self.version, "entities": list(self.entities)}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RegexDetector:
        return cls(entities=config.get("entities"))
