"""Identifiers that need a cue or a shape, not a model: handles, numbers after an identifier
word, dates of birth, ages, postcodes, and the dates HIPAA's Safe Harbor counts.

Each rule is general rather than fitted to one corpus:

* ``HANDLE``: a social-media handle, ``@`` and 2–30 word characters not preceded by a word
  character (an e-mail's ``@`` is excluded).
* ``ID_NUMBER``: a token holding at least three digits (letters, ``/ - .`` allowed) within three
  words after an identifier word: "no.", "number", "ID", "account", "licence/license",
  "passport", "record", "MRN", "policy", "case", "application", "serial", "VIN", "plate",
  "certificate", "device" — the identifier kinds of GDPR Art. 4(1) and of HIPAA Safe Harbor
  (45 CFR 164.514(b)(2)(i): account, certificate/licence, vehicle and device numbers). Digits
  alone are not enough: table columns, scores and odds carry no identifier word.
* ``DATE_OF_BIRTH``: a date (numeric, "31 May 1991", "May 31, 1991", "May 1991" or a year)
  after "born", "date of birth", "birth date", "DOB" or "d.o.b.".
* ``AGE``: "45 years old", "45-year-old", "aged 45", "age: 45".
* ``POSTCODE``: a UK postcode ("SW1A 1AA", in lower case too: "ls6 2ab"), and a US ZIP code after a state abbreviation
  ("NY 10001") or after "zip"/"postcode"/"postal code".
* ``PERSON``: a title followed by initials, with or without a surname ("Mr F.L.", "Mr K.H.
  Christoph", "Ms A.-M. Mendiboure"): how court judgments and reports anonymise a party; and a
  surname with an initial joined to it or written after it ("A.Okafor", "J.R.Tolkien", "Okafor,
  A.", "OKAFOR, A.B."), the way lists, references and forms write a person, the whole written
  form: not a place ("S.Korea") nor a common word, and not a word before a comma whose initial
  opens the next name ("However, J. Smith").
* ``DATE_TIME`` (opt-in): any date more specific than a year, numeric or with a month name
  (Safe Harbor keeps the year only), and a range or list of them as one mention ("29 and 30
  June 1992", "1 March and 31 December 1998").
* ``QUANTITY`` (opt-in): an amount of money, a number with an ISO 4217 currency code before or
  after it ("EUR 4,000", "100,000,000 TRL"; the codes, historical ones too, from Babel's CLDR
  data), a currency sign ("€ 80", "$5.2 million") or a currency word ("120,000 euros", "five
  hundred euros", "4,000,000 Swedish kronor"). A bare number is no amount: the number needs
  the currency next to it.
* ``ORGANIZATION`` (opt-in): an institution named by its head noun — "Court", "Ministry",
  "Office", "Authority", "Board", "Council", "Prosecutor", "University", "Hospital", "Bank",
  "Police", "Party", "Association", ... — with at least one capitalised word before it or an
  "of/for" complement after it: "the Istanbul State Security Court", "the Ministry of the
  Interior", "Social Insurance Authority", "Court of Cassation", "Office for Veterans and
  Persecuted Persons". The head alone ("the Court", "the Ministry") is no name. An acronym the
  text defines for such a name, in parentheses after or before it, is the name wherever the
  text uses it. The name's gloss in parentheses right after it (its name in the original
  language or its acronym: "Moers District Court (Amtsgericht)") is part of it, and
  so is a part of the institution named before it ("the Fourteenth Chamber of the Istanbul
  Assize Court", "the 8th Section of the Supreme Administrative Court").
* ``REFERENCE`` (opt-in, labelled ``ID_NUMBER``): a reference number of a record, case, file or
  register, as court judgments and administrative records write them in many national
  formats. After a cue word ("no.", "nos.", "number", "file", "reference", "case", "docket",
  "register", "registration", "application", "decision", "plot", "deed", "Az.", ...): a code
  of one to four parts (short letter groups, Roman numerals or digit groups before a part
  with a digit: "4 Ob 123/99", "II SA 1234/01", "2-345/2004", "D-4840"), and every code of a
  list after one cue ("nos. 260, 268 and 119/5"); not after "Article", "Protocol", "Law",
  "section", ... (a provision is no record), and not a bare year. Without a cue, only the
  shapes of register numbers: digits, a slash or colon, digits ("1996/276", "18403/91",
  "1971:437"), not a date.
* ``OCCUPATION`` (opt-in, labelled ``DEMOGRAPHIC``): an occupation named by its cue, one to
  three lower-case words after "worked/employed/practised as (a)" or "who/he/she is/was a(n)",
  up to a preposition or a stop: "worked as a ballet dancer for", "who was an advocate"
  ("serves as a marker" and "can be employed as a biomarker" name no one). Evidence:
  ``benchmarks/fitted_patterns.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from ..scores import PATTERN_SCORES
from ..spans import Span, check_labels, validate_texts
from ..traits import PATTERN
from ..vocabulary import AGE, HONORIFIC, MONTH, common_words, places, word_key
from .base import Recognizer
from .words import title_case

__all__ = ["IDENTIFIER_LABELS", "IdentifierDetector", "generic_institution"]
_S = PATTERN_SCORES["identifiers"]

IDENTIFIER_LABELS: tuple[str, ...] = ("HANDLE", "ID_NUMBER", "DATE_OF_BIRTH", "AGE", "POSTCODE", "DATE_TIME", "PERSON",
                                      "QUANTITY", "ORGANIZATION", "REFERENCE", "OCCUPATION")
_DEFAULT = ("HANDLE", "ID_NUMBER", "DATE_OF_BIRTH", "AGE", "POSTCODE", "PERSON")

_MONTH = MONTH
_DAY = r"(?:[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?:1[89]\d\d|20\d\d)"
_NUMERIC_DATE = r"(?:\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}|\d{4}-\d{2}-\d{2})"
_SPECIFIC_DATE = (rf"(?:{_NUMERIC_DATE}|{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}|{_MONTH}\s+{_DAY},?\s+{_YEAR}"
                  rf"|{_MONTH}\s+{_YEAR}|{_DAY}\s+{_MONTH}|{_MONTH}\s+{_DAY}(?!\d))")
_ANY_DATE = rf"(?:{_SPECIFIC_DATE}|{_YEAR})"

_HANDLE = re.compile(r"(?<![\w@.])@[A-Za-z_][A-Za-z0-9_.]{1,29}(?<!\.)")
_ID_WORD = (r"(?:no\.|nos\.|number|num\.|n[°º]|#|id|identifier|account|acct\.?|licen[cs]e|passport|record|mrn|"
            r"policy|case|application|serial|vin|plate|registration|certificate|device|member|"
            r"beneficiary|insurance|ssn|nhs|tax|iban|badge|employee)")
_ID_NUMBER = re.compile(
    rf"\b{_ID_WORD}(?:[ \t]+(?:is|was|no\.|nos\.|number))?[ \t:#]*"
    r"(?P<id>(?=[A-Za-z0-9./-]*\d[A-Za-z0-9./-]*\d[A-Za-z0-9./-]*\d)[A-Za-z0-9](?:[A-Za-z0-9/.-]*[A-Za-z0-9])?)", re.IGNORECASE)
# a reference number (PHI): a cue word, then a code of one to four parts, at least one digit
_REF_CUE = (r"(?:nos?\.|n[°º]\.?|numbers?|file|files|ref\.|reference|references|case|cases|docket|register|"
            r"registration|registry|record|application|applications|dossier|decision|judgment|ruling|order|"
            r"complaint|petition|plot|plots|parcel|sheet|deed|folio|az\.|rg|r\.g\.|sygn\.|"
            r"plate|invoice|receipt|certificate|permit|warrant|ticket)")
_REF_PART = r"(?:[A-Z][A-Za-z]{0,3}\.?|[IVX]{1,4}|\d{1,4})"  # "2 C", "4 Ob", "II SA", "I ACa"
_REF_CODE = (r"(?:(?:" + _REF_PART + r"[ \t]){0,3}"
             r"(?=[A-Za-z0-9./:-]*\d)[A-Za-z0-9](?:[A-Za-z0-9/.:-]*[A-Za-z0-9])?)")
_REFERENCE = re.compile(
    rf"(?<![\w.])(?i:{_REF_CUE})(?:[ \t]+(?i:no\.|nos\.|number|numbers))?[ \t:#]*"
    rf"(?P<ref>{_REF_CODE}(?:(?:,[ \t]*|[ \t]+and[ \t]+|[ \t]*;[ \t]*)(?=\S*\d){_REF_CODE})*)"
    r"(?![\w/-])")
_NOT_REF_BEFORE = re.compile(r"(?:protocol|article|articles|rule|rules|section|paragraph|§|chapter|law|act|"
                             r"regulation|decree|directive|convention|resolution|recommendation|item|point|page|"
                             r"pp?\.|annex|footnote|volume|vol\.|table|figure|fig\.)[ \t]*$", re.IGNORECASE)
# a domestic register/case number without a cue: "1996/276", "18403/91", "1971:437", "2004-12345"
_SLASH_CODE = re.compile(r"(?<![\w/.:-])(?:[A-Z][A-Za-z]{0,3}-(?:[IVX]{1,4}-)?)?(?:\d{3,6}[/:]\d{1,6}|\d{1,2}/\d{3,6})"
                         r"(?:[/-]\d{1,6})?(?![\w/:]|[.,-]\d)")
# an occupation by its cue (PHI): "worked as a ballet dancer", "who was an advocate"; one to
# three lower-case words, up to a preposition, conjunction or stop
_OCC_WORD = r"(?!the\b|an?\b)[a-z][a-z’'-]*"
_OCCUPATION = re.compile(
    r"(?:(?<!\bbe[ \t])\b(?:work(?:ed|ing|s)?|employed|practi[sc](?:e|ed|es|ing)|career|appointed|"
    r"recruited|hired|engaged|trained|qualified)[ \t]+as[ \t]+(?:an?[ \t]+)?"
    r"|\b(?:who|he|she)[ \t]+(?:is|was|had[ \t]+been|has[ \t]+been)[ \t]+an?[ \t]+)"
    rf"(?P<occ>(?:{_OCC_WORD}[ \t]+){{0,2}}?{_OCC_WORD})"
    r"(?=[ \t]*(?:[,.;:()]|\b(?:of|at|in|for|with|and|who|from|to|on|by|until|since|when|between|employed|"
    r"working|attached|under|during|whose|which|that)\b))")
_DOB = re.compile(rf"\b(?:born(?:[ \t]+(?:on|in))?|date[ \t]+of[ \t]+birth|birth[ \t]*date|d\.?o\.?b\.?)"
                  rf"[ \t:,-]*(?:(?:is|was)[ \t]+)?(?P<date>{_ANY_DATE})\b", re.IGNORECASE)
_AGE = re.compile(AGE, re.IGNORECASE)
_POSTCODE = re.compile(r"\b[A-Z]{1,2}\d[A-Z\d]?[ \t]\d[ABD-HJLNP-UW-Z]{2}\b|\b[a-z]{1,2}\d[a-z\d]?[ \t]\d[abd-hjlnp-uw-z]{2}\b"
                       r"|(?<=\b[A-Z]{2}[ \t])\d{5}(?:-\d{4})?\b"
                       r"|(?<=\b(?:zip|ZIP|Zip)[ \t])\d{5}(?:-\d{4})?\b"
                       r"|(?i:(?<=postcode[ \t])|(?<=postal code[ \t])|(?<=zip code[ \t]))[A-Z0-9][A-Z0-9 -]{2,8}[A-Z0-9]\b")
_DATE = re.compile(rf"\b{_SPECIFIC_DATE}\b", re.IGNORECASE)
# a range or list of dates is one mention: "29 and 30 June 1992", "1 March and 31 December 1998"
_DATE_RANGE = re.compile(rf"\b(?:{_DAY}(?:(?:,[ \t]*|[ \t]+and[ \t]+){_DAY})*|{_SPECIFIC_DATE})"
                         rf"[ \t]*(?:,[ \t]*)?(?:and|to|until|-|–)[ \t]*{_SPECIFIC_DATE}\b", re.IGNORECASE)
# a title and initials, with or without a surname: "Mr F.L.", "Mr K.H. Christoph", "Ms A.-M. Mendiboure"
# an initial (or two) joined to a capitalised surname, or after it: "A.Okafor", "Okafor, A.", "OKAFOR, A.B."
_INITIAL_JOINED = re.compile(r"(?<![\w.])(?:[^\W\d_a-z]\.){1,2}(?P<name>[^\W\d_a-z][\w'’-]+)")
_INITIAL_AFTER = re.compile(r"(?<![\w'’.-])(?P<name>[^\W\d_a-z][\w'’-]+),[ \t]?(?:[^\W\d_a-z]\.){1,2}"
                            r"(?![ \t]*[^\W\d_a-z][^\W\d_]*[a-z])(?!\w)")
_INITIALS = re.compile(rf"\b{HONORIFIC}\.?[ \t]+(?:[^\W\d_a-z]\.[ \t]?-?){{1,3}}"
                       r"(?:[ \t]*(?!(?:and|or|of|the|in)\b)[^\W\d_][\w'’-]+)?")


_NUMBER_WORD = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|"
                r"fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion)")
_AMOUNT = (r"(?:\d{1,3}(?:[,.\u00a0 ]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d+)?)"
           r"(?:[ \t]?(?:million|billion|thousand|m|bn)\b)?")
_ABOUT = r"(?:\b(?:approximately|approx\.|about|around|nearly|almost|some|over)[ \t]+)?"
_NOT_CURRENCY_WORDS = frozenset(["account", "gold", "silver", "palladium", "platinum", "rights", "units", "value",
                                 "day", "currency", "cupon"])


@lru_cache(maxsize=1)
def _money() -> re.Pattern[str]:
    """The money pattern: ISO 4217 codes and English currency words from Babel's CLDR data."""
    from babel.numbers import get_currency_name, list_currencies

    codes = sorted(list_currencies())
    words = {w.lower() for c in codes for n in (get_currency_name(c, count=2, locale="en"),
                                                get_currency_name(c, count=1, locale="en"))
             for w in n.split()[-1:] if w.isalpha() and w.lower() not in _NOT_CURRENCY_WORDS}
    code = rf"(?:{'|'.join(codes)})"
    word = rf"(?:[A-Z][a-z]+[ \t]){{0,2}}(?i:{'|'.join(sorted(words, key=len, reverse=True))})(?:[ \t]sterling)?"
    after = rf"(?:[ \t]?{code}\b|[ \t]?[€$£¥]|[ \t]{word}\b)(?:[ \t]\({code}\))?"
    return re.compile(rf"{_ABOUT}(?:(?<![\w.,]){code}[ \t\u00a0]?{_AMOUNT}(?![\d,.]\d)|[€$£¥][ \t]?{_AMOUNT}(?![\d,.]\d)"
                      rf"|(?<![\w.,]){_AMOUNT}{after})"
                      rf"|\b(?i:{_NUMBER_WORD}(?:[ \t-](?:and[ \t])?{_NUMBER_WORD})*)[ \t]{word}\b")


_HEADS = ("Court", "Courts", "Tribunal", "Ministry", "Minister", "Office", "Authority", "Agency", "Board", "Council",
          "Commission", "Committee", "Department", "Directorate", "Prosecutor", "Prosecutor's Office",
          "University", "Faculty", "School", "College", "Institute", "Hospital", "Hospitals", "Clinic", "Bank",
          "Police", "Gendarmerie", "Prison", "Party", "Association", "Union", "Federation", "Foundation",
          "Company", "Corporation", "Fund", "Service", "Services", "Staff", "Municipality",
          "Parliament", "Assembly", "Consulate", "Embassy", "Inspectorate", "Registry", "Ensemble", "Centre",
          "Center", "Society", "Church", "Army", "Navy", "Force", "Forces", "Headquarters")
"""Head nouns of institution names (a court's sections, chambers and divisions are parts, not
institutions: "the Fourth Section" names no one)."""
_ORDINAL = re.compile(r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th))",
                      re.IGNORECASE)
_PARTS = frozenset(["Section", "Chamber", "Division", "Government", "State"])


def generic_institution(value: str) -> bool:
    """Whether an organisation mention is a bare head or a numbered part, no name: "Chamber",
    "Council", "Government", "Fourth Section", "the Second Chamber"."""
    words = [w for w in value.split() if w.lower() != "the"]
    if len(words) == 1:
        return words[0] in _HEADS or words[0] in _PARTS
    return len(words) == 2 and bool(_ORDINAL.fullmatch(words[0])) and (words[1] in _HEADS or words[1] in _PARTS)


_UPPER = "".join(c for c in map(chr, range(0x2000)) if c.isupper())  # Latin, Greek, Cyrillic capitals
_CAP = rf"(?:[{_UPPER}][\w’'.-]*)"  # a capitalised word
_NOT_QUALIFIER = r"(?!(?:The|A|An|This|That|These|Its|His|Her|Their|Our|In|On|At|By|For|Of|And|Under|When|If)\b)"


def _institution(cap: str) -> re.Pattern[str]:
    return re.compile(
        rf"(?:{_NOT_QUALIFIER}{cap}[ \t]+(?:(?:and|of|for)[ \t]+{cap}[ \t]+)?){{0,5}}"
        rf"\b(?:{'|'.join(_HEADS)})\b"
        rf"(?:[ \t]+(?:of|for|on|in)(?:[ \t]+the)?(?:[ \t]+(?:and[ \t]+)?{cap}"
        rf"(?![ \t]*(?:of|for)[ \t]+the[ \t]+(?:Convention|Court)\b)){{1,6}})?")


# a word of the name ends without a full stop, so a name stops at its sentence's end
# ("the Ministry of Foreign Affairs. The ..."); dots inside a word stay ("S.A")
_INSTITUTION = _institution(rf"(?:[{_UPPER}][\w’'-]*(?:\.[\w’'-]+)*)")


_ACRONYM = r"[A-Z]{2,6}(?:-[A-Z]{1,2})?"
_ACRONYM_AFTER = re.compile(rf"[ \t]*\((?:the[ \t]+)?[\"“]?({_ACRONYM})[\"”]?\)")
_ACRONYM_BEFORE = re.compile(rf"\b({_ACRONYM})[ \t]*\((?:the[ \t]+)?$")


# a name's gloss in parentheses: its name in the original language or its acronym, no digits,
# starting with a capital ("(Amtsgericht)", "(Sąd Rejonowy w Lubaniu)", "(Halkın Emek Partisi, HEP)")
_GLOSS = re.compile(rf"[ \t]*\([ \t]*[{_UPPER}][^()\d\n]{{0,100}}\)")


# a numbered or named part of an institution before its name: "the Fourteenth Chamber of the
# Istanbul Assize Court", "the 8th Section of the Supreme Administrative Court"
_PART_OF = re.compile(rf"\b(?:(?:{_ORDINAL.pattern}|[IVX]{{1,5}}|{_NOT_QUALIFIER}{_CAP})[ \t]+){{1,2}}"
                      r"(?:Chamber|Section|Division|Department|Panel|Bench|Branch|Senate)[ \t]+of[ \t]+(?:the[ \t]+)?$")


def _with_part(text: str, start: int) -> int:
    """The start of the part named right before an institution's name (``start`` when none)."""
    p = _PART_OF.search(text, max(0, start - 60), start)
    return p.start() if p is not None else start


def _glossed(text: str, end: int) -> int:
    """The end of the gloss in parentheses right after ``end`` (``end`` when there is none)."""
    g = _GLOSS.match(text, end)
    return g.end() if g is not None and len(g.group(0).split()) <= 10 else end


def _institutions(text: str) -> list[Span]:
    """Institution names (see the module docstring): a head with a qualifier or a complement,
    and every use of an acronym the text defines for one ("Erich-Weinert-Ensemble (EWE)",
    "the PKK (the Kurdistan Workers' Party)")."""
    out: list[Span] = []
    acronyms: set[str] = set()
    for m in _INSTITUTION.finditer(text):
        value = m.group(0).rstrip(" .,")
        if " " not in value:
            continue
        end = m.start() + len(value)
        out.append(Span(_with_part(text, m.start()), _glossed(text, end), "ORGANIZATION", _S["institution"], "identifiers"))
        after = _ACRONYM_AFTER.match(text, end)
        before = _ACRONYM_BEFORE.search(text, max(0, m.start() - 16), m.start())
        acronyms.update(x.group(1) for x in (after, before) if x is not None)
    for acronym in acronyms:
        out += [Span(a.start(), a.end(), "ORGANIZATION", _S["institution"], "identifiers")
                for a in re.finditer(rf"(?<![\w-]){re.escape(acronym)}(?![\w-])", text)]
    return out


def _references(text: str) -> list[Span]:
    """Reference numbers (see the module docstring), labelled ID_NUMBER; a list after one cue
    ("nos. 260, 268 and 119/5") is one span per code."""
    out = []
    for m in _REFERENCE.finditer(text):
        if _NOT_REF_BEFORE.search(text, max(0, m.start() - 16), m.start()):
            continue
        for c in re.finditer(_REF_CODE, m.group("ref")):
            a, b = m.start("ref") + c.start(), m.start("ref") + c.end()
            if any(ch.isdigit() for ch in text[a:b]) and not re.fullmatch(_YEAR, text[a:b]):
                out.append(Span(a, b, "ID_NUMBER", _S["reference"], "identifiers"))
    cued = list(out)
    out += [Span(m.start(), m.end(), "ID_NUMBER", _S["slash_code"], "identifiers") for m in _SLASH_CODE.finditer(text)
            if not any(c.start < m.end() and m.start() < c.end for c in cued)]
    return out




def _initialled(text: str) -> list[Span]:
    """A surname with an initial joined to it or after it ("A.Okafor", "Okafor, A."): a title-case
    or all-caps word of two letters or more that is no common word or place."""
    common, known = common_words(), places()
    out = []
    for pattern in (_INITIAL_JOINED, _INITIAL_AFTER):
        for m in pattern.finditer(text):
            word = m.group("name")
            if len(word) >= 2 and (title_case(word) or word.isupper()) and word_key(word) not in common \
                    and word_key(word) not in known:
                out.append(Span(m.start(), m.end(), "PERSON", _S["initialled"], "identifiers"))
    return out


def _find(text: str, wanted: frozenset[str]) -> list[Span]:
    out: list[Span] = []
    if "HANDLE" in wanted:
        out += [Span(m.start(), m.end(), "HANDLE", _S["handle"], "identifiers") for m in _HANDLE.finditer(text)]
    if "ID_NUMBER" in wanted:
        out += [Span(m.start("id"), m.end("id"), "ID_NUMBER", _S["id_number"], "identifiers")
                for m in _ID_NUMBER.finditer(text)]
    if "REFERENCE" in wanted:
        out += _references(text)
    if "OCCUPATION" in wanted:
        out += [Span(m.start("occ"), m.end("occ"), "DEMOGRAPHIC", _S["occupation"], "identifiers") for m in _OCCUPATION.finditer(text)]
    if "DATE_OF_BIRTH" in wanted:
        out += [Span(m.start("date"), m.end("date"), "DATE_OF_BIRTH", _S["date_of_birth"], "identifiers") for m in _DOB.finditer(text)]
    if "AGE" in wanted:
        out += [Span(m.start(), m.end(), "AGE", _S["age"], "identifiers") for m in _AGE.finditer(text)]
    if "POSTCODE" in wanted:
        out += [Span(m.start(), m.end(), "POSTCODE", _S["postcode"], "identifiers") for m in _POSTCODE.finditer(text)]
    if "PERSON" in wanted:
        out += [Span(m.start(), m.start() + len(m.group(0).rstrip()), "PERSON", _S["initials"], "identifiers")
                for m in _INITIALS.finditer(text)]
        out += _initialled(text)
    if "DATE_TIME" in wanted:
        out += [Span(m.start(), m.end(), "DATE_TIME", _S["date"], "identifiers") for m in _DATE.finditer(text)]
        out += [Span(m.start(), m.end(), "DATE_TIME", _S["date"], "identifiers") for m in _DATE_RANGE.finditer(text)]
    if "QUANTITY" in wanted:
        out += [Span(m.start(), m.end(), "QUANTITY", _S["money"], "identifiers") for m in _money().finditer(text)]
    if "ORGANIZATION" in wanted:
        out += _institutions(text)
    return out


class IdentifierDetector(Recognizer):
    """Cue- and shape-based identifiers (see the module docstring for each rule).

    Args:
        entities: labels to report, from :data:`IDENTIFIER_LABELS` (default: all but DATE_TIME,
            QUANTITY, ORGANIZATION, REFERENCE and OCCUPATION).
    """

    kind = "identifiers"
    name = "identifiers"
    traits = frozenset([PATTERN])
    version = "6"

    def __init__(self, *, entities: Sequence[str] | None = None) -> None:
        self.entities = check_labels(entities, IDENTIFIER_LABELS, _DEFAULT)
        self._wanted = frozenset(self.entities)

    def __repr__(self) -> str:
        return f"IdentifierDetector(entities={list(self.entities)})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """Spans per text (overlaps not resolved: the text stage merges)."""
        return [_find(t, self._wanted) for t in validate_texts(texts)]

    def get_config(self) -> dict[str, Any]:
        return {"type": self.kind, "version": self.version, "entities": list(self.entities)}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> IdentifierDetector:
        return cls(entities=config.get("entities"))
