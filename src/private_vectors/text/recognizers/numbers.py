"""When a run of digits is a phone or card number: its numbering plan, its checksum, the words around it.

A results table is full of digit runs shaped like phone and card numbers: golf rounds
("69 67 138"), set scores ("6-3 6-4 7-5"), fall-of-wicket lists ("1-12 2-45 3-101 4-156"),
decimals ("639.55 639.38"). Length and a possible-number test accept most of them. A phone number
is taken only on positive evidence (:func:`phone_evidence`): the plan of the number as
``phonenumbers`` groups it, a writing convention of phone numbers, or a phone word beside it; a
card number only when it passes the Luhn check and is written as cards are (:func:`card_evidence`).
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["PHONE_REGIONS", "card_evidence", "luhn_ok", "phone_evidence", "phone_ok"]

PHONE_REGIONS = ("US", "GB", "DE", "FR", "IL", "IN", "CA", "BR")
"""Regions a number without a country code may belong to (presidio's phone recognizer's defaults)."""
_YEAR = re.compile(r"(?:18|19|20)\d\d")

# the words that say a number is a phone number: a label or a verb of calling, before it on its
# line (or ending the line above: "Phone:\n467 3395"), or a line's kind after it ("416 60 039 office")
_PHONE_WORD = (r"(?:tel|tele?phone|phone|ph|mobile|mob|cell|cellphone|fax|desk|office|hotline|helpline|"
               r"switchboard|newsroom|newsdesk|whatsapp|sms|number|call(?:s|ed|ing)?|ring(?:s|ing)?|"
               r"dial(?:s|l?ed|l?ing)?|text(?:s|ed|ing)?|messag(?:e|es|ed|ing)|reach(?:ed|ing)?|"
               r"contact(?:s|ed|ing)?|answer(?:s|ed|ing)?|registered)")
_WORD_BEFORE = re.compile(rf"(?i)\b{_PHONE_WORD}\b[^\n]{{0,40}}$")
_LABEL_ABOVE = re.compile(rf"(?i)\b{_PHONE_WORD}\b[^\n]{{0,20}}:[ \t]*\n[ \t]*$")
_WORD_AFTER = re.compile(r"(?i)[ \t]*[-(,/]?[ \t]*(?:office|fax|mobile|home|work|cell|direct|desk)\b")
# writing conventions of phone numbers: a country or trunk prefix, an area code in parentheses,
# an exchange and line number joined by a hyphen or dot ("555-0142"), a long subscriber number
_INTERNATIONAL = re.compile(r"[ \t]*(?:\+|00[1-9])")
_AREA_CODE = re.compile(r"[ \t]*\([ \t]*0?\d{1,4}(?:[ \t]\d{1,4})?[ \t]*\)")
_TRUNK = re.compile(r"[ \t]*0[1-9]")
_EXCHANGE_LINE = re.compile(r"\d{3}[-.]\d{4}(?:\s?(?:x|ext\.?)\s?\d{1,5})?[ \t]*$")
_LOCAL = re.compile(r"[ \t]*\d{3}[ \t]\d{4}[ \t]*$")
_LONG_GROUP = re.compile(r"\d{5,}")
_DECIMAL_LIST = re.compile(r"\d\.\d+[ \t]+[+-]?\.?\d|\d[ \t]+\.\d")  # "639.55 639.38", "56 .468": decimals


def luhn_ok(digits: str) -> bool:
    """Whether a digit string passes the Luhn check (ISO/IEC 7812-1, annex B)."""
    total, parity = 0, len(digits) % 2
    for i, ch in enumerate(digits):
        d = int(ch)
        if i % 2 == parity:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def phone_ok(candidate: str) -> bool:
    """Whether a phone-shaped ``candidate`` can be a phone number: not a run of years ("2007-2008",
    "1990 2000 2010": a range or list of years), and a possible number by ``phonenumbers`` (its
    length fits the numbering plan of the country code it carries, or of one of
    :data:`PHONE_REGIONS`). Possible, not valid: made-up numbers ("555-0142") are still numbers
    a writer gave as a phone. Necessary, not sufficient: see :func:`phone_evidence`."""
    import phonenumbers

    groups = re.findall(r"\d+", candidate)
    if len(groups) >= 2 and all(len(g) == 4 and _YEAR.fullmatch(g) for g in groups):
        return False
    regions = (None,) if candidate.lstrip().startswith("+") else PHONE_REGIONS
    for region in regions:
        try:
            if phonenumbers.is_possible_number(phonenumbers.parse(candidate, region)):
                return True
        except phonenumbers.NumberParseException:
            continue
    return False


@lru_cache(maxsize=4096)
def _grouped_as_planned(candidate: str) -> bool:
    """Whether ``phonenumbers`` finds a valid number written with its plan's grouping
    (``Leniency.STRICT_GROUPING``) covering ``candidate``, in a region of :data:`PHONE_REGIONS`."""
    import phonenumbers

    value = candidate.strip()
    for region in PHONE_REGIONS:
        for m in phonenumbers.PhoneNumberMatcher(value, region, leniency=phonenumbers.Leniency.STRICT_GROUPING):
            if m.start <= 1 and m.end >= len(value) - 1:
                return True
    return False


def phone_evidence(text: str, start: int, end: int) -> str | None:
    """Why ``text[start:end]`` (a possible number, :func:`phone_ok`) is a phone number, or None.

    Evidence, in this order: a phone word before it on its line or as the label of the line above
    ("Phone:", "call ... at", "fax"), or after it ("416 60 039 office"); a writing convention of
    phone numbers (an international or trunk prefix, "+44 ...", "0490 ..."; an area code in
    parentheses; an exchange and line number joined by a hyphen or a dot, "555-0142"; a subscriber
    number of five digits or more); a valid number grouped as its numbering plan writes it
    (``phonenumbers``' ``STRICT_GROUPING`` leniency). Digits separated by spaces into short
    groups ("69 67 138"), pairs ("6-3 6-4") or decimals ("639.55 639.38") have none of these.
    """
    value = text[start:end]
    line = text.rfind("\n", 0, start) + 1
    if _WORD_BEFORE.search(text, max(line, start - 48), start) or _LABEL_ABOVE.search(text, max(0, start - 32), start):
        return "a phone word before it"
    if _WORD_AFTER.match(text, end):
        return "a phone word after it"
    if _DECIMAL_LIST.search(value):
        return None
    if _INTERNATIONAL.match(value) or _TRUNK.match(value):
        return "an international or trunk prefix"
    if _AREA_CODE.match(value):
        return "an area code in parentheses"
    if _EXCHANGE_LINE.search(value) or _LOCAL.fullmatch(value) or _LONG_GROUP.search(value):
        return "an exchange and line number"
    if _grouped_as_planned(value):
        return "grouped as its numbering plan writes it"
    return None


_CARD_WORD = re.compile(r"(?i)\b(?:card|credit|debit|visa|mastercard|amex|american express|discover|cc|pan)\b[^\n]{0,30}$")
_CARD_GROUPS = ((4, 4, 4, 4), (4, 4, 4, 4, 3), (4, 4, 4, 4, 2), (4, 4, 4, 4, 1), (4, 4, 4, 3), (4, 4, 4, 2),
                (4, 4, 4, 1), (4, 4, 5), (4, 6, 5), (4, 6, 4), (4, 4, 4, 4, 4))


def card_evidence(text: str, start: int, end: int) -> str | None:
    """Why ``text[start:end]`` (13 to 19 digits passing :func:`luhn_ok`) is a card number, or None:
    written as one run of digits, or in the groups card issuers print (four digits at a time;
    4-6-5 and 4-6-4), with one separator throughout; or any grouping after a card word ("Visa",
    "card no."). A list of scores ("15-6 15-9 11-15 15-10") passes the checksum one time in ten
    and is written in none of these groups."""
    value = text[start:end]
    groups = re.split(r"[ -]", value)
    separators = set(re.findall(r"[ -]", value))
    if len(groups) == 1 or (len(separators) == 1 and tuple(len(g) for g in groups) in _CARD_GROUPS):
        return "written as card numbers are"
    line = text.rfind("\n", 0, start) + 1
    if _CARD_WORD.search(text, max(line, start - 40), start):
        return "a card word before it"
    return None
