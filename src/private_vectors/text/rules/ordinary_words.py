"""A model guess made only of words the batch also writes in lower case is an ordinary word."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from ..spans import Span
from ..surrogates import normalise_token
from ..traits import DERIVED, LEARNED, PRECISE, has
from .base import MODEL_LABELS, RuleContext, _PartedRule
from .context_free import place_code_kept

__all__ = ["OrdinaryWords", "lower_case_words"]

WORD = re.compile(r"[\w@+][\w'’.@+-]*", re.UNICODE)
"""A word as the keyed index and the case checks read it."""


def lower_case_words(texts: Sequence[str], *, min_texts: int = 2) -> frozenset[str]:
    """Normalised words that at least ``min_texts`` of the texts write in lower case (texts
    entirely in lower case say nothing about case and are skipped): evidence that a capitalised
    occurrence is an ordinary word. Two texts, not one: a name typed once in lower case next to
    its capitalised form must not unmask it."""
    seen: Counter[str] = Counter()
    for t in texts:
        if not t.islower():
            seen.update({normalise_token(m.group(0)) for m in WORD.finditer(t) if m.group(0).islower()})
    return frozenset(w for w, n in seen.items() if n >= min_texts)


class OrdinaryWords(_PartedRule):
    """A name, place, group or organisation from a model or vocabulary recognizer (not a regex,
    not the keyed index) whose every word other texts of the batch write in lower case
    (:func:`lower_case_words`) is dropped: "Stem Cells" in a title over abstracts about stem cells
    is no name. A case check: it applies to spans whose recognizer reads capital letters, not to
    the learned tagger's (it reads no case: "maria garcia" is a name to it as "Maria Garcia" is).
    Part ``place-codes``: in a text under 100 words (:func:`~.context_free.long_text`), a place
    written as a code in capitals (:func:`~private_vectors.text.vocabulary.place_codes`: "US",
    "UK", "MO") is no ordinary word because other posts write "us", "uk" or "mo": in lower case
    the code is another word (the pronoun "us"), and a short message names places that way, as
    part ``place-codes`` of rule ``name-shape`` keeps them. Rows ``ordinary-words`` and
    ``ordinary-words.place-codes`` of ``benchmarks/text_rules.py``.

    Args:
        off: parts switched off, of :attr:`parts`.
    """

    name = "ordinary-words"
    version = "2"
    summary = "a model guess whose every word the batch also writes in lower case is an ordinary word"
    parts = ("place-codes",)

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        lower = context.ordinary
        if not lower:
            return spans
        code = place_code_kept(text, "place-codes" not in self.off)
        return [s for s in spans if not _ordinary(text, s, lower) or code(s)]


def _ordinary(text: str, span: Span, lower: frozenset[str]) -> bool:
    if span.label not in MODEL_LABELS or has(span, PRECISE, DERIVED, LEARNED):
        return False
    words = [normalise_token(m.group(0)) for m in WORD.finditer(text, span.start, span.end)]
    words = [w for w in words if w]
    return bool(words) and all(w in lower for w in words)
