"""The word-list recognizer: names and places from Faker-derived lists, the fallback without presidio.

Measured weaker than presidio + spaCy (``benchmarks/detection.py``), so the text stage
uses it only when presidio-analyzer or spaCy is missing, and records that in its config.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..spans import Span, validate_texts
from ..wordlist import name_spans
from .base import Recognizer
from .regex import cue_name_spans

__all__ = ["WordListDetector"]


class WordListDetector(Recognizer):
    """PERSON and LOCATION spans from Faker-derived word lists (the presidio-less fallback)."""

    kind = "wordlist"
    name = "wordlist"
    entities = ("PERSON", "LOCATION")

    def __repr__(self) -> str:
        return "WordListDetector()"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        return [name_spans(t, detector=self.name) + cue_name_spans(t, detector=self.name)
                for t in validate_texts(texts)]

    def get_config(self) -> dict[str, Any]:
        import faker

        return {"type": "wordlist", "faker": faker.VERSION}
