"""Normalise text before detection and map the spans found back to the original offsets.

Detectors see a canonical form; the replacement happens on the original characters, so no
character a detector flagged survives in any written form. Per character, in this order:

* zero-width characters, bidi controls and the soft hyphen (Unicode ``Cf`` format characters)
  are dropped;
* Unicode NFKC (full-width letters, ligatures, compatibility forms), per character so every
  output character knows its source;
* Latin look-alikes in Cyrillic and Greek (``а`` → ``a``, ``ο`` → ``o``) are folded when the
  word around them also has Latin letters (a word written wholly in Cyrillic stays Cyrillic);
* a line break between two capitalised words, on a line without digits, becomes a space
  ("Amelia\\nOkafor"; an address line "12 Main Street\\nSpringfield" keeps its break, and so
  does a line above a country's line: "ALFRICK\\nUnited Kingdom");
* a placeholder-shaped token (``<AMELIA_OKAFOR>``, ``[JOHN-DOE]``) and an ALL-CAPS run of two or
  more words are title-cased, a placeholder's ``_``/``-`` joints and brackets become spaces, so a
  name written that way reads as a name in running text.

Map-back rule: a span ``[a, b)`` of the normalised text covers the original characters from
the source of ``a`` to the source of ``b - 1`` inclusive (a dropped character inside the span is
covered too).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from .spans import Span
from .vocabulary import UPPER_LETTERS, countries

__all__ = ["Normalised", "normalise"]

# Cyrillic and Greek letters that look like Latin ones (Unicode confusables, the Latin subset)
_HOMOGLYPHS = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M",
    "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S", "Ү": "Y",
    "ο": "o", "α": "a", "ν": "v", "ι": "i", "κ": "k", "ρ": "p", "τ": "t", "υ": "u", "Α": "A", "Β": "B",
    "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T",
    "Υ": "Y", "Χ": "X",
})
_WORD = re.compile(r"\w+", re.UNICODE)
_CAP = rf"[{UPPER_LETTERS}][{UPPER_LETTERS}'’]+"  # capitals of Latin (with accents), Greek and Cyrillic
_PLACEHOLDER = re.compile(rf"[<\[{{‹«]({_CAP}(?:[_\- ]{_CAP})+)[>\]}}›»]")
_CAPS_RUN = re.compile(rf"(?<!\w){_CAP}(?:[ \t]+{_CAP})+(?!\w)")
_CAPS_STOP = frozenset(["AND", "OR", "OF", "THE", "IN", "ON", "FOR", "TO", "WITH", "BY", "AT", "A", "AN", "VS", "NOT"])


class Normalised:
    """A normalised text and, per character, the index of its source character."""

    def __init__(self, original: str, text: str, source: list[int]) -> None:
        self.original = original
        self.text = text
        self.source = source

    def span_back(self, span: Span) -> Span:
        """``span`` (on the normalised text) on the original offsets."""
        if not self.source or span.end <= span.start:
            return span
        a = self.source[min(span.start, len(self.source) - 1)]
        b = self.source[min(span.end, len(self.source)) - 1] + 1
        return Span(a, max(b, a + 1), span.label, span.score, span.detector)

    def spans_back(self, spans: Sequence[Span]) -> list[Span]:
        """Every span on the original offsets."""
        if self.text == self.original:
            return list(spans)
        return [self.span_back(s) for s in spans]


def _fold_homoglyphs(chars: list[str]) -> None:
    text = "".join(chars)
    for m in _WORD.finditer(text):
        word = m.group(0)
        if any("a" <= c.lower() <= "z" for c in word) and word != word.translate(_HOMOGLYPHS):
            for i in range(m.start(), m.end()):
                chars[i] = chars[i].translate(_HOMOGLYPHS)


def _title_case(chars: list[str], a: int, b: int, joints: str) -> None:
    start = True
    for i in range(a, b):
        c = chars[i]
        if c in joints:
            chars[i] = " "
            start = True
        elif c.isalpha():
            chars[i] = c if start else c.lower()
            start = False
        else:
            start = c.isspace()


_POSTCODE_TAIL = re.compile(r"[ \t]+[\d -]{3,10}$")


def country_line(chars: Sequence[str], start: int) -> bool:
    """Whether the line of ``chars`` (a string or a list of characters) starting at ``start`` is
    a country, with or without a postcode: the last line of an address block ("ALFRICK\nUnited
    Kingdom"), whose break stays."""
    end = start
    while end < len(chars) and chars[end] != "\n":
        end += 1
    line = _POSTCODE_TAIL.sub("", "".join(chars[start:end]).strip())
    return " ".join(line.casefold().split()) in countries()


def _shape(chars: list[str]) -> None:
    """Placeholder-shaped names and ALL-CAPS runs title-cased; a line break inside a name a space."""
    text = "".join(chars)
    if text.isupper():  # a text wholly in capitals says nothing about which words are names
        return
    for m in _PLACEHOLDER.finditer(text):
        _title_case(chars, m.start(1), m.end(1), "_-")
        chars[m.start()] = chars[m.end() - 1] = " "  # brackets read as spaces: a name in running text
    for m in _CAPS_RUN.finditer(text):
        if not any(w in _CAPS_STOP for w in m.group(0).split()):
            _title_case(chars, m.start(), m.end(), "")
    line_start = 0
    for i in range(1, len(chars) - 1):
        if chars[i] != "\n":
            continue
        line = chars[line_start:i]
        line_start = i + 1
        # "Amelia\nOkafor": a break between two capitalised words on a line without digits
        # (an address line "12 Main Street\nSpringfield" keeps its break)
        if chars[i - 1].isalpha() and chars[i + 1].isupper() and not any(c.isdigit() for c in line) \
                and not country_line(chars, i + 1):
            j = i - 1
            while j > 0 and chars[j - 1].isalpha():
                j -= 1
            if chars[j].isupper():
                chars[i] = " "


def normalise(text: str) -> Normalised:
    """The detection form of ``text`` with each character's source offset (see the module docstring).
    Placeholders and ALL-CAPS runs may hold accented, Greek and Cyrillic capitals
    (``<OISÍN_RANDRIANASOLO>``)."""
    out: list[str] = []
    source: list[int] = []
    for i, c in enumerate(text):
        if unicodedata.category(c) == "Cf":
            continue
        n = unicodedata.normalize("NFKC", c) if not c.isascii() else c
        for ch in n:
            out.append(ch)
            source.append(i)
    _fold_homoglyphs(out)
    _shape(out)
    return Normalised(text, "".join(out), source)
