"""A small, dependency-light PII detector: regexes plus name and place word lists.

Used to relabel "plain" training sentences that in fact contain PII (TextCrafter's PII
classifier, Tang et al. eqs. 5–8) and to label synthetic data. It is a heuristic, not a
guarantee: structured identifiers (e-mail, phone, credit card with Luhn check, US SSN,
IBAN with mod-97 check, IP address, URL/domain, dates, street addresses) are found by
regular expressions; person names and places by word lists derived from Faker's locale
providers (first and last names of ~20 Latin-script locales, countries, US states) plus
a list of large cities. If ``presidio-analyzer`` is installed, ``use_presidio=True`` adds
its findings.

Entity names follow presidio's: EMAIL_ADDRESS, PHONE_NUMBER, CREDIT_CARD, US_SSN,
IBAN_CODE, IP_ADDRESS, DOMAIN_NAME, DATE_TIME, STREET_ADDRESS, PERSON, LOCATION.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Any

from .errors import InvalidParameterError, InvalidTypeError, ModelNotAvailableError

__all__ = [
    "ENTITY_TYPES", "PIIDetector", "PIISpan", "contains_pii", "detect_pii",
    "synthetic_pii_sentences", "synthetic_plain_sentences",
]

ENTITY_TYPES = (
    "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE", "IP_ADDRESS",
    "DOMAIN_NAME", "DATE_TIME", "STREET_ADDRESS", "PERSON", "LOCATION",
)



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
_STOP = frozenset(_words("""
The A An And But Or If In On At To Of For By With From As Is It Its This That These Those He She
We They You I My Our Your His Her Their Me Him Them Us Who What When Where Why How Which Not No Yes
All Any Some Each Every Many Much More Most Other Such Only Own Same So Than Too Very Can Will Just
Should Now May June July August April March Monday Tuesday Wednesday Thursday Friday Saturday Sunday
January February September October November December Mark Bill Grant Rose Joy Hope Faith Grace
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
"""))

_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_URL = re.compile(r"\b(?:https?://|www\.)[^\s]+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|edu|gov|io|info|biz|co|de|uk|fr|es|it|nl|hu|cz|gl|pt|br|ru|cn|jp)\b",
                  re.IGNORECASE)
_PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]\d{2,4}){1,4}(?![\w])"
                    r"|(?<![\w+])\+?\d{10,13}(?!\w)")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_SSN = re.compile(r"(?<!\d)(?!000|666|9\d\d)\d{3}[- ](?!00)\d{2}[- ](?!0000)\d{4}(?!\d)")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b")
_IPV4 = re.compile(r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\d.])")
_IPV6 = re.compile(r"\b(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}\b")
_MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_DATE = re.compile(r"\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b|\b\d{4}-\d{2}-\d{2}\b"
                   rf"|\b{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTHS}\s+\d{{4}}\b")
_STREET = re.compile(r"\b\d{1,6}\s+(?:[A-Z][\w'.-]*\s+){1,4}(?:Street|St|Road|Rd|Avenue|Ave|Boulevard|Blvd|Lane|Ln|Drive|Dr"
                     r"|Court|Ct|Place|Pl|Way|Terrace|Circle|Highway|Hwy|Parkway|Square|Sq|Katu|Straße|Strasse|Gasse)\b\.?"
                     r"(?:,?\s+(?:Apt|Suite|Unit)\.?\s*\d+)?")
# continental style: "<postcode> Puruntie 82", "Rua do Arenque 1634"; and lone "Apt. 595"
_STREET_EU = re.compile(r"\b\d{3,6}\s+[A-Z][\w'’.-]+(?:\s+[\w'’.-]+){0,3}?\s+\d{1,5}\b|\b(?:Apt|Suite|Unit)\.?\s*\d+\b")
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_NAME_CUE = re.compile(r"\b(?:[Mm]y name is|[Nn]amed|[Cc]alled|Mr\.?|Mrs\.?|Ms\.?|Dr\.?)\s+([A-Z][\w'’-]+)")


@dataclass(frozen=True)
class PIISpan:
    """One detected piece of PII: entity type, character offsets, the text, a heuristic score."""

    entity_type: str
    start: int
    end: int
    text: str
    score: float


def _luhn_ok(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for i, ch in enumerate(digits):
        d = int(ch)
        if i % 2 == parity:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _iban_ok(text: str) -> bool:
    s = text.replace(" ", "")
    if not 15 <= len(s) <= 34:
        return False
    moved = s[4:] + s[:4]
    try:
        number = int("".join(str(int(c, 36)) for c in moved))
    except ValueError:
        return False
    return number % 97 == 1


@lru_cache(maxsize=1)
def _word_lists() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
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
    keep = lambda s: frozenset(w for w in s if len(w) > 1 and w[0].isupper() and w not in _STOP)  # noqa: E731
    return keep(first), keep(last), keep(places)


def structured_matches(text: str, *, dates_are_not_phones: bool = False) -> Iterator[tuple[str, re.Match[str], float]]:
    """(label, match, score) for every structured identifier the project's regexes find: e-mail,
    URL, card (Luhn-checked), US SSN, IBAN (mod-97 checked), IPv4/IPv6, date, phone.

    Args:
        text: the text to search.
        dates_are_not_phones: skip phone matches that are dates ("2020-01-02", "12/03/1980");
            the text stage sets it; :class:`PIIDetector` keeps its original behaviour.
    """
    for m in _EMAIL.finditer(text):
        yield "EMAIL_ADDRESS", m, 1.0
    for m in _URL.finditer(text):
        yield "URL", m, 0.6
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _luhn_ok(digits):
            yield "CREDIT_CARD", m, 0.95
    for m in _SSN.finditer(text):
        yield "US_SSN", m, 0.85
    for m in _IBAN.finditer(text):
        if _iban_ok(m.group(0)):
            yield "IBAN_CODE", m, 1.0
    for pattern in (_IPV4, _IPV6):
        for m in pattern.finditer(text):
            yield "IP_ADDRESS", m, 0.9
    for m in _DATE.finditer(text):
        yield "DATE_TIME", m, 0.7
    for m in _PHONE.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if dates_are_not_phones and (_DATE.fullmatch(m.group(0).strip())
                                     or re.match(r"\d{4}-\d{2}-\d{2}\b", m.group(0))):
            continue  # 2020-01-02, 12/03/1980, "2003-08-28 12:13": a date, not a phone number
        if 7 <= len(digits) <= 15 and not re.fullmatch(r"\d{4}", m.group(0).strip()):
            yield "PHONE_NUMBER", m, 0.65 if len(digits) >= 9 else 0.55


class PIIDetector:
    """Find PII spans in text with regexes and word lists (optionally presidio as well).

    Args:
        entities: the entity types to report (default: all of :data:`ENTITY_TYPES`).
        min_score: drop findings scored below this (0–1).
        use_presidio: also run presidio-analyzer (must be installed, with a spaCy model).
    """

    def __init__(self, *, entities: Any = None, min_score: float = 0.5, use_presidio: bool = False) -> None:
        if entities is None:
            self.entities = ENTITY_TYPES
        else:
            if isinstance(entities, str):
                raise InvalidTypeError("entities", "a list of entity type names", entities)
            unknown = sorted(set(entities) - set(ENTITY_TYPES))
            if unknown:
                raise InvalidParameterError("entities", f"names from {list(ENTITY_TYPES)}", unknown)
            self.entities = tuple(entities)
        if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not 0 <= min_score <= 1:
            raise InvalidParameterError("min_score", "a number in [0, 1]", min_score)
        self.min_score = float(min_score)
        self.use_presidio = bool(use_presidio)
        self._presidio: Any = None
        if self.use_presidio:
            try:
                from presidio_analyzer import AnalyzerEngine
            except ImportError as exc:
                raise ModelNotAvailableError("use_presidio=True needs presidio-analyzer and a spaCy English "
                                             "model: pip install presidio-analyzer") from exc
            self._presidio = AnalyzerEngine()

    def __repr__(self) -> str:
        return f"PIIDetector(entities={len(self.entities)} types, min_score={self.min_score}, use_presidio={self.use_presidio})"

    # -- public API ------------------------------------------------------------------
    def detect(self, text: str) -> list[PIISpan]:
        """All PII spans in ``text``, sorted by position, overlaps resolved by score then length."""
        if not isinstance(text, str):
            raise InvalidTypeError("text", "a str", text)
        spans = self._regex_spans(text) + self._name_spans(text)
        if self._presidio is not None:
            for r in self._presidio.analyze(text=text, language="en"):
                etype = "LOCATION" if r.entity_type in ("GPE", "LOCATION") else r.entity_type
                spans.append(PIISpan(etype, r.start, r.end, text[r.start:r.end], float(r.score)))
        spans = [s for s in spans if s.entity_type in self.entities and s.score >= self.min_score]
        return _resolve_overlaps(spans)

    def contains_pii(self, text: str) -> bool:
        """Whether ``text`` has at least one PII span."""
        return bool(self.detect(text))

    def entity_types(self, text: str) -> set[str]:
        """The set of entity types present in ``text``."""
        return {s.entity_type for s in self.detect(text)}

    def redact(self, text: str, *, placeholder: str = "<{entity_type}>") -> str:
        """``text`` with each span replaced by ``placeholder`` (formatted with the entity type)."""
        out, pos = [], 0
        for s in self.detect(text):
            out.append(text[pos:s.start])
            out.append(placeholder.format(entity_type=s.entity_type))
            pos = s.end
        out.append(text[pos:])
        return "".join(out)

    # -- detectors -------------------------------------------------------------------
    def _regex_spans(self, text: str) -> list[PIISpan]:
        found = [PIISpan("DOMAIN_NAME" if label == "URL" else label, m.start(), m.end(), m.group(0), score)
                 for label, m, score in structured_matches(text)]
        for pattern, score in ((_STREET, 0.8), (_STREET_EU, 0.6)):
            found += [PIISpan("STREET_ADDRESS", m.start(), m.end(), m.group(0), score) for m in pattern.finditer(text)]
        return found

    def _name_spans(self, text: str) -> list[PIISpan]:
        first, last, places = _word_lists()
        words = list(_WORD.finditer(text))
        found: list[PIISpan] = []
        i = 0
        while i < len(words):
            w = words[i].group(0)
            if not w[0].isupper() or w in _STOP:
                i += 1
                continue
            # a run of capitalised words, adjacent (only spaces between)
            j = i + 1
            while (j < len(words) and j - i < 4 and words[j].group(0)[0].isupper()
                   and words[j].group(0) not in _STOP and text[words[j - 1].end():words[j].start()].strip() in ("", ".")):
                j += 1
            sentence_start = _at_sentence_start(text, words[i].start())
            if sentence_start and j - i > 1 and w not in first and w not in last:
                i += 1  # "Mail Maria Lopez …": a capitalised first word that is no name
                continue
            run = [x.group(0) for x in words[i:j]]
            start, end = words[i].start(), words[j - 1].end()
            if len(run) >= 2 and (run[0] in first or run[-1] in last):
                found.append(PIISpan("PERSON", start, end, text[start:end], 0.85))
            elif 3 <= len(run) <= 4 and any(len(x) == 1 for x in run[1:-1]):  # "Szabina J Gelencsér"
                found.append(PIISpan("PERSON", start, end, text[start:end], 0.75))
            elif len(run) >= 2 and any(x in first or x in last for x in run) and not sentence_start:
                found.append(PIISpan("PERSON", start, end, text[start:end], 0.6))
            elif len(run) == 1 and w in places:
                found.append(PIISpan("LOCATION", start, end, w, 0.6 if sentence_start else 0.7))
            elif len(run) == 1 and (w in first or w in last) and not sentence_start:
                found.append(PIISpan("PERSON", start, end, w, 0.6))
            elif len(run) >= 2 and " ".join(run) in places:
                found.append(PIISpan("LOCATION", start, end, text[start:end], 0.7))
            i = j
        for m in _NAME_CUE.finditer(text):
            if m.group(1) not in _STOP:
                found.append(PIISpan("PERSON", m.start(1), m.end(1), m.group(1), 0.75))
        return found


def _at_sentence_start(text: str, pos: int) -> bool:
    before = text[:pos].rstrip()
    return not before or before[-1] in ".!?:\"'(\n"


def _resolve_overlaps(spans: list[PIISpan]) -> list[PIISpan]:
    kept: list[PIISpan] = []
    for s in sorted(spans, key=lambda s: (-s.score, -(s.end - s.start), s.start)):
        if all(s.end <= k.start or s.start >= k.end for k in kept):
            kept.append(s)
    return sorted(kept, key=lambda s: s.start)


_DEFAULT: PIIDetector | None = None


def _default() -> PIIDetector:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = PIIDetector()
    return _DEFAULT


def detect_pii(text: str) -> list[PIISpan]:
    """PII spans in ``text`` with the default :class:`PIIDetector`."""
    return _default().detect(text)


def contains_pii(text: str) -> bool:
    """Whether ``text`` contains PII according to the default :class:`PIIDetector`."""
    return _default().contains_pii(text)


# -- synthetic training sentences (Faker) ------------------------------------------------
_PII_TEMPLATES = (
    "My name is {name} and you can reach me at {email}.",
    "Please call {name} on {phone} before Friday.",
    "{name} lives at {street}, {city}.",
    "Send the invoice to {email}, attention {name}.",
    "The card ending in {card} belongs to {name}.",
    "Patient {name}, born {date}, was admitted to the ward.",
    "Contact {name} at {phone} or {email} about the lease.",
    "Her social security number is {ssn}.",
    "Wire the deposit to IBAN {iban} in the name of {name}.",
    "{name} logged in from {ip} yesterday.",
    "Our new address is {street}, {city}, {country}.",
    "I met {name} in {city} last summer; her number is {phone}.",
    "Dear {name}, your appointment on {date} is confirmed.",
    "The package for {name} was delivered to {street}.",
    "{name} was born on {date} in {city}.",
)
_PLAIN_TEMPLATES = (
    "The committee will review the proposal next week.",
    "Regular exercise improves sleep quality and mood.",
    "The recipe calls for two cups of flour and a pinch of salt.",
    "Stock markets fell sharply after the announcement.",
    "The museum opens an exhibition on modern sculpture.",
    "Heavy rain is expected across the region tonight.",
    "The software update fixes several security issues.",
    "Students must submit their essays by the end of the month.",
    "A new study links air pollution to heart disease.",
    "The team won the match after extra time.",
    "Prices of fresh vegetables rose during the winter.",
    "The train was delayed because of a signal failure.",
)


_FIRST_DATE, _LAST_DATE = date(1930, 1, 1), date(2010, 12, 31)  # fixed range: seeded output never depends on today


def synthetic_pii_sentences(n: int, *, seed: int | None = None, locale: str = "en_US") -> list[str]:
    """``n`` sentences each containing PII (names, e-mails, phones, cards, addresses…), from Faker.

    Args:
        n: how many.
        seed: Faker seed (tests/benchmarks); None = unseeded.
        locale: Faker locale.
    """
    from faker import Faker

    fake = Faker(locale)
    if seed is not None:
        fake.seed_instance(seed)
    out = []
    for i in range(int(n)):
        template = _PII_TEMPLATES[i % len(_PII_TEMPLATES)] if seed is None else fake.random_element(_PII_TEMPLATES)
        out.append(template.format(
            name=fake.name(), email=fake.email(), phone=fake.phone_number(), street=fake.street_address(),
            city=fake.city(), country=fake.country(), card=fake.credit_card_number(),
            date=fake.date_between_dates(_FIRST_DATE, _LAST_DATE).isoformat(),
            ssn=fake.ssn(), iban=fake.iban(), ip=fake.ipv4()))
    return out


def synthetic_plain_sentences(n: int, *, seed: int | None = None) -> list[str]:
    """``n`` sentences without PII: fixed topical templates plus Faker lorem sentences."""
    from faker import Faker

    fake = Faker("en_US")
    if seed is not None:
        fake.seed_instance(seed)
    out = []
    for i in range(int(n)):
        out.append(_PLAIN_TEMPLATES[i % len(_PLAIN_TEMPLATES)] if i % 2 == 0 else fake.sentence(nb_words=10).lower().capitalize())
    return out
