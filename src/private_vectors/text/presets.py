"""Concept presets: which entity types each built-in text concept replaces, and where the list comes from.

| preset | replaces | source |
|---|---|---|
| ``PII`` | direct identifiers: names, contact data (e-mail, phone, URL, handle), government, account, licence and record numbers, card/IBAN/SSN/IP, street addresses and postcodes, places, dates of birth, ages | GDPR Art. 4(1) ("an identification number, location data, an online identifier"); NIST SP 800-122 §2.1 |
| ``PHI`` | ``PII`` plus every date more specific than a year, device, vehicle and certificate numbers, reference numbers of records, cases and registers, organisations, demographic attributes (nationality, ethnicity, religion, political group, occupation, sex/gender terms), amounts of money and measured quantities | HIPAA Safe Harbor, 45 CFR 164.514(b)(2)(i), its 18 identifiers |
| ``quasi`` | dates (years too), organisations, demographic attributes, quantities | TAB's quasi-identifier categories (Pilán et al. 2022, "The Text Anonymization Benchmark", §3) |

Why ``PHI`` covers more than names, contacts and dates: Safe Harbor's 18th identifier is "any
other unique identifying number, characteristic, or code" (45 CFR 164.514(b)(2)(i)(R)). In a
record about one person, the employer, hospital, court or authority named, the person's
nationality, ethnic or religious group and occupation (spaCy's NORP, presidio's NRP), and a sum
paid or a measurement are such characteristics: together with the other quasi-identifiers they
single a person out (Sweeney 2000, "Simple Demographics Often Identify People Uniquely"). The
18th identifier is read this way for text: organisations (presidio/spaCy ORG and institution
names by their head noun), reference numbers of records, cases and registers (a cue word such
as "file no." or a register-number shape such as "1996/276"), NRP, demographic and occupation
terms (listed, or named after a cue: "worked as a ..."), money (ISO 4217 codes and
currency words) and spaCy MONEY/QUANTITY; plain counts and percentages are not taken (scores,
rates and odds identify nobody). Figures: ``benchmarks/text_tuning.py --concept PHI``.

Presets compose: ``Sanitizer(["PII", "medical"])`` runs one pass with the union of the
presets' detectors (one presidio/spaCy run with the union of entity types).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PRESETS", "Preset", "is_text_concept"]


@dataclass(frozen=True)
class Preset:
    """A built-in text concept: the span labels it replaces and the list they come from."""

    name: str
    labels: tuple[str, ...]
    source: str


_PII = ("PERSON", "LOCATION", "EMAIL_ADDRESS", "PHONE_NUMBER", "URL", "HANDLE", "CREDIT_CARD", "IBAN_CODE",
        "US_SSN", "IP_ADDRESS", "ID_NUMBER", "UK_NHS", "MEDICAL_LICENSE", "DATE_OF_BIRTH", "AGE", "POSTCODE")
PRESETS: dict[str, Preset] = {
    "PII": Preset("PII", _PII, "GDPR Art. 4(1); NIST SP 800-122 §2.1"),
    "PHI": Preset("PHI", (*_PII, "DATE_TIME", "ORGANIZATION", "NRP", "DEMOGRAPHIC", "QUANTITY"),
                  "HIPAA Safe Harbor, 45 CFR 164.514(b)(2)(i), its 18th identifier read as in the table"),
    "quasi": Preset("quasi", ("DATE_TIME", "ORGANIZATION", "DEMOGRAPHIC", "NRP", "QUANTITY"),
                    "TAB quasi identifiers (Pilán et al. 2022, §3)"),
}
"""The presets by name."""


def is_text_concept(concept: object) -> bool:
    """Whether ``concept`` names what the text stage can detect: a preset (``"PII"``, ``"PHI"``,
    ``"quasi"``), a built-in span concept (``"person"``, ``"medical"``, ...), or a non-empty list of
    them (``["PII", "medical"]``, composed in one pass)."""
    from ..fitted.spec import BUILTIN_CONCEPTS

    names = {n.lower() for n in (*PRESETS, *BUILTIN_CONCEPTS)}
    if isinstance(concept, str):
        return concept.strip().lower() in names
    if isinstance(concept, (list, tuple)) and concept:
        return all(isinstance(c, str) and c.strip().lower() in names for c in concept)
    return False
