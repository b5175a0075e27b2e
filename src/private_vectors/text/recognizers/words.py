"""Word shapes the vocabulary recognizers (names, places, firms) share."""

from __future__ import annotations

import re

from ..vocabulary import NAME_PREFIXES

__all__ = ["LINE", "POSSESSIVE", "TOKEN", "capitalised", "place_case", "sentence_initial",
           "title_case"]

TOKEN = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
"""A word: a letter, then letters, digits, apostrophes and hyphens."""
POSSESSIVE = re.compile(r"['’]s$")
LINE = re.compile(r"^[ \t>|*•]*(.*?)[ \t|]*$", re.MULTILINE)
"""One line of text without its quoting marks and edge blanks ("> ", "|  ", "* ")."""
_SENTENCE_END = ".!?:;\n\"“(>-*•"
_INNER_CAPITAL_PREFIXES = (*NAME_PREFIXES, "O")


def capitalised(word: str) -> bool:
    """A capital first, and not all caps unless three letters or fewer."""
    return word[0].isupper() and (len(word) == 1 or not word.isupper() or len(word) <= 3)


def title_case(word: str) -> bool:
    """"Dexter", "O'Neil", "Jean-Luc", "McAllen": an upper-case letter, then lower-case letters
    (a capital only after a hyphen, an apostrophe or a name prefix): not "SpA", "IMA", "HeLa"."""
    if not word[:1].isupper():
        return False
    for i, c in enumerate(word[1:], 1):
        if c.isupper() and word[i - 1] not in "-'’" and word[:i] not in _INNER_CAPITAL_PREFIXES:
            return False
    return True


def place_case(word: str) -> bool:
    """A place is written "Rzeszów" or "LEPPEN" (five letters or more), not "SpA", "II", "VAS"."""
    return title_case(word) or (word.isupper() and len(word) >= 5)


def sentence_initial(text: str, start: int) -> bool:
    """Whether ``start`` begins a sentence (or the text)."""
    before = text[max(0, start - 64):start].rstrip(" \t")  # bounded: long documents stay linear
    return (not before and start <= 64) or (bool(before) and before[-1] in _SENTENCE_END)
