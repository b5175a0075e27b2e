"""Regular-expression detectors: fast and precise for structured identifiers.

E-mail, phone, credit card (Luhn-checked), IBAN (mod-97-checked), US SSN, IP address,
URL/domain, dates and street addresses. These are the project's regexes (formerly in
``private_vectors.pii``, which re-exports them). Street addresses are labelled LOCATION.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..errors import InvalidParameterError, InvalidTypeError
from .spans import Span, validate_texts

__all__ = ["REGEX_LABELS", "RegexDetector"]

REGEX_VERSION = "1"

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


REGEX_LABELS: tuple[str, ...] = (
    "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS", "URL",
    "DATE_TIME", "LOCATION",
)
"""Labels the regex detector can emit (street addresses come out as LOCATION)."""

_DEFAULT_LABELS = tuple(x for x in REGEX_LABELS if x not in ("URL", "DATE_TIME"))


def _find(text: str, wanted: frozenset[str]) -> list[Span]:
    found: list[Span] = []
    name = "regex"

    def add(label: str, m: re.Match[str], score: float) -> None:
        if label in wanted:
            found.append(Span(m.start(), m.end(), label, score, name))

    for m in _EMAIL.finditer(text):
        add("EMAIL_ADDRESS", m, 1.0)
    if "URL" in wanted:
        for m in _URL.finditer(text):
            add("URL", m, 0.6)
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _luhn_ok(digits):
            add("CREDIT_CARD", m, 0.95)
    for m in _SSN.finditer(text):
        add("US_SSN", m, 0.85)
    for m in _IBAN.finditer(text):
        if _iban_ok(m.group(0)):
            add("IBAN_CODE", m, 1.0)
    for pattern in (_IPV4, _IPV6):
        for m in pattern.finditer(text):
            add("IP_ADDRESS", m, 0.9)
    for m in _DATE.finditer(text):
        add("DATE_TIME", m, 0.7)
    for m in _PHONE.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if _DATE.fullmatch(m.group(0).strip()):
            continue  # 2020-01-02, 12/03/1980: a date, not a phone number
        if 7 <= len(digits) <= 15 and not re.fullmatch(r"\d{4}", m.group(0).strip()):
            add("PHONE_NUMBER", m, 0.65 if len(digits) >= 9 else 0.55)
    for m in _STREET.finditer(text):
        add("LOCATION", m, 0.8)
    for m in _STREET_EU.finditer(text):
        add("LOCATION", m, 0.6)
    return found


class RegexDetector:
    """The project's regexes as a :class:`~private_vectors.text.spans.Detector`.

    Args:
        entities: labels to report, from :data:`REGEX_LABELS` (default: all but URL and
            DATE_TIME, which are common in ordinary text).
    """

    name = "regex"

    def __init__(self, *, entities: Sequence[str] | None = None) -> None:
        if entities is None:
            labels = _DEFAULT_LABELS
        else:
            if isinstance(entities, str):
                raise InvalidTypeError("entities", "a list of labels", entities)
            unknown = sorted(set(entities) - set(REGEX_LABELS))
            if unknown:
                raise InvalidParameterError("entities", f"labels from {list(REGEX_LABELS)}", unknown)
            labels = tuple(entities)
        self.entities = labels
        self._wanted = frozenset(labels)

    def __repr__(self) -> str:
        return f"RegexDetector(entities={list(self.entities)})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """Spans per text (overlaps not resolved: the ensemble merges)."""
        return [_find(t, self._wanted) for t in validate_texts(texts)]

    def get_config(self) -> dict[str, Any]:
        return {"type": "regex", "version": REGEX_VERSION, "entities": list(self.entities)}
