"""The audit's detector: the strongest detection the library has, and presidio beside it.

A store's leaks are the values its text stage missed, so the audit must not count with the text
stage's own decisions. :class:`AuditDetector` runs, on every text:

* the library's recognizers with its learned tagger (``Sanitizer(concept, detector="model")``):
  every span they detect, **before** the selection rules that keep some of them on purpose
  (a one-word name-like word in a text about no one, a country in a long text, ordinary words),
  at the stage's score threshold;
* the audit's own recognizer of unknown names (:func:`unknown_names`: two or three capitalised
  words that no English word list holds);
* presidio's default recognizers on spaCy (:class:`~private_vectors.eval.text_rows.PresidioAnchor`'s
  analyzer: independent of the library's configuration), with its **national-ID recognizers
  counted only where their validators pass** — presidio scores a checksum-validated match 1.0 and
  leaves unvalidated patterns (``US_BANK_NUMBER``, ``US_DRIVER_LICENSE``, …) at their low
  pattern score, which matches any run of digits; a national-ID match on a phone or card number
  (``UK_NHS``'s checksum passes on one 10-digit number in eleven) is dropped as well, from either
  detector.

Names and places are also looked for in a **case-restored view** of each text (:func:`case_view`:
lower-case words outside every English word list capitalised), since presidio's spaCy model reads
letter case and misses "ottoline vanderpump". Overlapping findings of one text merge into one value (the union of their spans), typed by its
longest member (ties: the type more detectors gave, then an identifier type), so a name two detectors cut differently counts once.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["GENERIC_TYPES", "NOT_IDENTIFIERS", "AuditDetector", "Finding", "case_view", "is_identifier", "merge_findings",
           "personal_ids", "unknown_names"]

GENERIC_TYPES = frozenset({"PERSON", "LOCATION", "NRP", "DATE_TIME", "ORGANIZATION", "EMAIL_ADDRESS", "PHONE_NUMBER",
                           "URL", "IP_ADDRESS", "CREDIT_CARD", "IBAN_CODE", "CRYPTO", "AGE", "HANDLE", "POSTCODE",
                           "DATE_OF_BIRTH", "STREET_ADDRESS", "MEDICAL_LICENSE", "QUANTITY", "MONEY", "DEMOGRAPHIC"})
"""Types that are not national identity or account numbers: counted as found. Every other type
(``US_SSN``, ``UK_NHS``, ``US_BANK_NUMBER``, ``US_DRIVER_LICENSE``, ``ID_NUMBER``, …) is a
national-ID type: counted only validated (presidio) and never on a phone or card number."""

_NUMBERS = frozenset({"PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE"})


@dataclass(frozen=True)
class Finding:
    """One value found in a text: its type, its offsets, the value and the detectors that found it."""

    type: str
    start: int
    end: int
    value: str
    sources: tuple[str, ...] = ()


NOT_IDENTIFIERS = frozenset({"DATE_TIME", "LOCATION", "NRP", "URL", "ORGANIZATION", "AGE", "QUANTITY", "MONEY",
                             "DEMOGRAPHIC", "POSTCODE", "DATE_OF_BIRTH", "STREET_ADDRESS"})
"""Types that describe a person rather than point at one ("last weekend", "Madrid", "Dutch", "34"):
counted and listed, but not in the headline's identifier count. Every other type (names, e-mail
addresses, phone numbers, card, account, passport and licence numbers, IP addresses, …) is an
identifier."""


def is_identifier(entity_type: str) -> bool:
    """Whether ``entity_type`` points at one person or account (see :data:`NOT_IDENTIFIERS`)."""
    return entity_type not in NOT_IDENTIFIERS


def _family(source: str) -> str:
    """The detector behind a source: presidio once, whether the audit's or the library's copy runs it,
    on the text or its case view."""
    base = source.removesuffix("+cased")
    return "presidio" if base in ("presidio", "private_vectors:presidio") else base


def merge_findings(text: str, found: Sequence[Finding]) -> list[Finding]:
    """Overlapping findings of ``text`` merged into one each (see the module docstring), in text order."""
    merged: list[list[Finding]] = []
    for f in sorted(found, key=lambda f: (f.start, -f.end)):
        if merged and f.start < max(g.end for g in merged[-1]):
            merged[-1].append(f)
        else:
            merged.append([f])
    out = []
    for group in merged:
        start, end = min(g.start for g in group), max(g.end for g in group)
        votes = Counter(t for t, _ in {(g.type, _family(s)) for g in group for s in g.sources})
        lead = max(group, key=lambda g: (g.end - g.start, votes[g.type], is_identifier(g.type)))
        out.append(Finding(lead.type, start, end, text[start:end], tuple(sorted({s for g in group for s in g.sources}))))
    return out


def _national_on_a_number(f: Finding, found: Sequence[Finding]) -> bool:
    return f.type not in GENERIC_TYPES and any(
        g.type in _NUMBERS and g.start < f.end and f.start < g.end for g in found)


_PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*>")


def _in_placeholder(f: Finding, text: str) -> bool:
    """A finding inside a ``<LABEL>`` the text stage wrote (presidio reads ``<UK_NHS>`` as a name)."""
    return any(m.start() < f.end and f.start < m.end() for m in _PLACEHOLDER.finditer(text, max(0, f.start - 40)))


class AuditDetector:
    """Finds identifiers in texts (see the module docstring). One verb: :meth:`find`.

    Args:
        concept: the library's text concept whose recognizers run (default ``"PII"``).
        library: run the library's recognizers and tagger.
        presidio: run presidio's default recognizers.
    """

    def __init__(self, concept: Any = "PII", *, library: bool = True, presidio: bool = True) -> None:
        self.concept, self.library, self.presidio = concept, bool(library), bool(presidio)
        self._memo: dict[str, list[Finding]] = {}  # this detector's own texts (one audit): memory only

    def __repr__(self) -> str:
        return f"AuditDetector(concept={self.concept!r}, library={self.library}, presidio={self.presidio})"

    def describe(self) -> list[str]:
        """What runs, in words (for the report)."""
        out = []
        if self.library:
            out.append("private_vectors' recognizers and learned tagger (detector='model'), before its keep rules")
        if self.presidio:
            out.append("presidio's default recognizers on spaCy (national IDs only where validated)")
        return out

    def find(self, texts: Sequence[str | None]) -> list[list[Finding]]:
        """The merged findings of each text (none for None or an empty text); a text this detector
        has read before is not read again."""
        items = [t or "" for t in texts]
        new = list(dict.fromkeys(t for t in items if t not in self._memo))
        self._memo.update(zip(new, self._find(new), strict=True))
        return [list(self._memo[t]) for t in items]

    def _find(self, items: list[str]) -> list[list[Finding]]:
        raw = self._detect(items)
        views = [case_view(t) for t in items]
        for i, v in enumerate(views):
            raw[i] += unknown_names(v, items[i])
        cased = [i for i, (t, v) in enumerate(zip(items, views, strict=True)) if v != t]
        for i, fs in zip(cased, self._detect([views[i] for i in cased]), strict=True):
            raw[i] += [Finding(f.type, f.start, f.end, items[i][f.start:f.end], tuple(f"{s}+cased" for s in f.sources))
                       for f in fs if f.type in _CASED_TYPES]
        return [merge_findings(t, [f for f in fs if not _national_on_a_number(f, fs) and not _in_placeholder(f, t)])
                for t, fs in zip(items, raw, strict=True)]


    def _detect(self, items: list[str]) -> list[list[Finding]]:
        raw: list[list[Finding]] = [[] for _ in items]
        if self.library and items:
            for i, spans in enumerate(_library_findings(self.concept, items)):
                raw[i] += spans
        if self.presidio and items:
            for i, spans in enumerate(_presidio_findings(items)):
                raw[i] += spans
        return raw


_CASED_TYPES = frozenset({"PERSON", "LOCATION"})
_LOWER_WORD = re.compile(r"(?<![\w@.])[^\W\d_]{3,}(?![\w@])")


@functools.lru_cache(maxsize=1)
def _plain_words() -> frozenset[str]:
    from ..text.vocabulary import common_words, english_words

    return english_words() | common_words()


def case_view(text: str) -> str:
    """``text`` with each lower-case word of three letters or more that no English word list holds
    capitalised (same length): "call yuuka shimasaki" → "call Yuuka Shimasaki". Detectors that read
    letter case (presidio's spaCy model, the name shapes) find lower-case names in it; the audit
    takes only the names and places found there."""
    plain = _plain_words()
    return _LOWER_WORD.sub(lambda m: m.group(0).capitalize() if m.group(0).islower() and m.group(0) not in plain
                           else m.group(0), text)


_CAPITAL = re.compile(r"(?<![\w@.])[A-Z][a-z]{2,}(?![\w@])")


def unknown_names(view: str, text: str) -> list[Finding]:
    """Runs of two or three capitalised words of :func:`case_view` ``view``, one space or hyphen
    apart, that no English word list holds ("Call Mimount Bijster at …" → "Mimount Bijster"): a
    person's name that every detector can miss, being in no vocabulary and in a sentence the
    tagger did not learn."""
    plain = _plain_words()
    words = [m for m in _CAPITAL.finditer(view) if m.group(0).lower() not in plain]
    runs: list[list[re.Match[str]]] = []
    for m in words:
        if runs and m.start() - runs[-1][-1].end() == 1 and view[runs[-1][-1].end()] in " -":
            runs[-1].append(m)
        else:
            runs.append([m])
    return [Finding("PERSON", r[0].start(), r[-1].end(), text[r[0].start():r[-1].end()], ("audit:unknown-words",))
            for r in runs if 2 <= len(r) <= 3]


@functools.lru_cache(maxsize=4)
def _sanitizer(concept: Any) -> Any:
    from ..text import Sanitizer

    return Sanitizer(concept, policy="keep", detector="model", timeout=None)


def _library_findings(concept: Any, texts: list[str]) -> list[list[Finding]]:
    """The library's detected spans (recognizers, tagger and detection-stage rules; no selection rule
    but its score threshold) per text, on the text's own offsets (escaping keeps lengths)."""
    from ..text.rules import escape

    san = _sanitizer(tuple(concept) if isinstance(concept, list) else concept)
    items = [escape(t) for t in texts]
    found = san.detection.run(items, san._context(), san.index.ordinary)  # the stage's own detection pass
    if found is None:  # on_error="redact_all" never applies here (on_error="raise")
        return [[] for _ in texts]
    floor = san.options.score_threshold
    return [[Finding(s.label, s.start, s.end, t[s.start:s.end], (f"private_vectors:{s.detector}",))
             for s in spans if s.score >= floor and s.end > s.start] for t, spans in zip(texts, found, strict=True)]


@functools.lru_cache(maxsize=1)
def _analyzer() -> Any:
    from presidio_analyzer import BatchAnalyzerEngine

    from .text_rows import PresidioAnchor

    analyzer, _ = PresidioAnchor()._engines()
    return BatchAnalyzerEngine(analyzer_engine=analyzer)


def _validated(result: Any) -> bool:
    """A presidio result counts: a generic type, or a national ID whose validator passed."""
    if result.entity_type in GENERIC_TYPES:
        return True
    explanation = getattr(result, "analysis_explanation", None)
    return bool(explanation is not None and getattr(explanation, "validation_result", None) is True)


def _presidio_findings(texts: list[str]) -> list[list[Finding]]:
    results = _analyzer().analyze_iterator(texts, language="en", batch_size=32, return_decision_process=True)
    return [[Finding(r.entity_type, r.start, r.end, t[r.start:r.end], ("presidio",)) for r in res
             if _validated(r) and r.end > r.start] for t, res in zip(texts, results, strict=True)]


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
_PHONE = re.compile(r"(?<!\w)\+?\d[\d ().-]{5,}\d(?!\w)")


def personal_ids(ids: Sequence[str], detector: AuditDetector | None = None) -> dict[str, Any]:
    """Ids that look personal: an e-mail address, a phone-like number (7 digits or more) or a name
    the detector finds once separators (``._-``) are read as spaces. Counts by type, no id."""
    by_type: dict[str, int] = {}
    rest: list[int] = []
    for i, x in enumerate(ids):
        s = str(x)
        kind = "EMAIL_ADDRESS" if _EMAIL.search(s) else "PHONE_NUMBER" if (
            _PHONE.search(s) and sum(c.isdigit() for c in s) >= 7) else None
        if kind:
            by_type[kind] = by_type.get(kind, 0) + 1
        else:
            rest.append(i)
    if detector is not None and rest:
        spaced = [re.sub(r"[._\-]+", " ", str(ids[i])) for i in rest]
        for found in detector.find(spaced):
            names = {f.type for f in found if f.type == "PERSON"}
            for t in names:
                by_type[t] = by_type.get(t, 0) + 1
    return {"ids": len(ids), "personal": sum(by_type.values()), "by_type": dict(sorted(by_type.items()))}
