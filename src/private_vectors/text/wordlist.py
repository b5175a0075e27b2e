"""Word-list person/place detector: the fallback when presidio is not installed.

Names and places come from Faker's locale providers and a list of large cities (the lists
of :mod:`private_vectors.pii`). Measured weaker than presidio + spaCy (see
``benchmarks/results/detection``), so the Sanitizer uses it only when presidio-analyzer or
spaCy is missing, and records that in its config. The same lists truecase lower-case queries
(``truecase``) so spaCy can see names users type in lower case.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from .spans import Span, validate_texts

__all__ = ["WordListDetector", "name_words", "truecase"]

_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)


@lru_cache(maxsize=1)
def name_words() -> tuple[frozenset[str], frozenset[str]]:
    """(casefolded first/last names, casefolded places) minus common English words."""
    from .. import pii

    first, last, places = pii._word_lists()
    stop = {w.casefold() for w in pii._STOP}
    try:
        from spacy.lang.en.stop_words import STOP_WORDS

        stop |= {w.casefold() for w in STOP_WORDS}
    except ImportError:  # pragma: no cover - spaCy absent
        pass
    names = frozenset(w.casefold() for w in first | last) - stop
    return names, frozenset(w.casefold() for w in places) - stop


def truecase(text: str, keep: Callable[[str], bool] | None = None) -> str:
    """``text`` with lower-case words that are known names or places capitalised (same length).

    spaCy's small model finds no entity in "what do the records say about amelia okafor";
    it finds PERSON in "... about Amelia Okafor". Only whole lower-case words from the name
    and place lists change, so offsets are preserved. ``keep(word)`` true leaves a word as it
    is (a Sanitizer passes the words its documents write in lower case: "gene", "will").
    """
    names, places = name_words()
    chars = list(text)
    for m in _WORD.finditer(text):
        w = m.group(0)
        if w.islower() and (w in names or w in places) and not (keep is not None and keep(w)):
            cap = w[0].upper()
            if len(cap) == 1:
                chars[m.start()] = cap
    return "".join(chars)


class WordListDetector:
    """PERSON and LOCATION spans from Faker-derived word lists (the presidio-less fallback)."""

    name = "wordlist"

    def __init__(self) -> None:
        from ..pii import PIIDetector

        self._detector = PIIDetector(entities=("PERSON", "LOCATION"), min_score=0.0)

    def __repr__(self) -> str:
        return "WordListDetector()"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        out = []
        for text in validate_texts(texts):
            found = self._detector._name_spans(text)
            out.append([Span(s.start, s.end, s.entity_type, s.score, self.name) for s in found])
        return out

    def get_config(self) -> dict[str, Any]:
        import faker

        return {"type": "wordlist", "faker": faker.VERSION}
