"""Shape tests of a span's text shared by the span rules and the keyed entity index.

Each is a pure function of a string: is it shaped like a name, an acronym, a heading that mixes
words in capitals with other words, a term ending in a plain noun.
"""

from __future__ import annotations

import re

from .spans import Span
from .vocabulary import NAME_PREFIXES

__all__ = ["acronym", "looks_like_a_name", "mixed_caps", "overlaps", "term_shaped"]

_NAME_WORD = re.compile(rf"(?:{'|'.join(NAME_PREFIXES)}|O['’]|D['’])?[^\W\d_][^\W\d_'’.-]*(?:['’.-][^\W\d_]*)*\.?",
                        re.UNICODE)


def acronym(value: str) -> bool:
    """An all-caps word of at most four letters ("RNA", "CI", "RT")."""
    value = value.strip()
    return value.isupper() and len(value) <= 4 and value.isalpha()


def looks_like_a_name(value: str) -> bool:
    """Whether every word of ``value`` is shaped like a word of a name or place: letters (with
    ' - . inside), a capital only at the start of a part or after Mc/Mac ("Jean-Luc", "McDonald",
    "O'Neil"), no digit; "HeLa", "CsA", "FIP-2", "ApoE(-/-" and a lone all-caps word of two to
    four letters ("PCNA") are not."""
    words = value.split()
    if len(words) == 1 and acronym(value) and len(value) >= 2:
        return False
    for word in words:
        if not _NAME_WORD.fullmatch(word):
            return False
        parts = re.split(r"['’-]", re.sub(r"^(?:Mc|Mac)", "", word))
        if not word.isupper() and any(c.isupper() for part in parts for c in part[1:]):
            return False
    return True


def mixed_caps(value: str) -> bool:
    """Words in capitals beside words that are not ("CONCLUSION Lobular", "Type III IFN", "Pol
    IV"): a section heading or an acronym next to a word, not a name; a name is written either
    way throughout ("Amelia Okafor", "AMELIA OKAFOR")."""
    words = [w for w in value.split() if any(c.isalpha() for c in w)]
    caps = [w.isupper() and sum(c.isalpha() for c in w) >= 2 for w in words]
    return any(caps) and not all(caps)


def term_shaped(value: str, plain_nouns: frozenset[str]) -> bool:
    """Two or more words, the last a plain noun (:func:`~private_vectors.text.wordlist.plain_nouns`):
    "Hamilton Depression Rating Scale", "NHGRI GWAS Catalog"."""
    words = [w.casefold() for w in re.findall(r"[^\W\d_]+", value)]
    return len(value.split()) >= 2 and bool(words) and words[-1] in plain_nouns


def overlaps(a: Span, b: Span) -> bool:
    """Whether two spans share a character."""
    return a.start < b.end and b.start < a.end
