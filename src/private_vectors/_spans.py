"""The detected-span record and the check of a batch of texts, shared by the text stage
(:mod:`private_vectors.text`, which names them in :mod:`private_vectors.text.spans`) and the
learned tagger (:mod:`private_vectors.text_model`), which sits below it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import InvalidTypeError

__all__ = ["Span", "validate_texts"]


@dataclass(frozen=True)
class Span:
    """One detected span: ``text[start:end]`` is a ``label`` found by ``detector`` with ``score``."""

    start: int
    end: int
    label: str
    score: float
    detector: str

    def shifted(self, offset: int) -> Span:
        """The same span moved by ``offset`` characters (chunked detection)."""
        return Span(self.start + offset, self.end + offset, self.label, self.score, self.detector)


def validate_texts(texts: Any, name: str = "texts") -> list[str]:
    """A list of str from ``texts``; a bare str or a non-str item is refused with a clear error."""
    if isinstance(texts, str):
        raise InvalidTypeError(name, "a sequence of strings", texts, note="wrap a single text in a list")
    try:
        out = list(texts)
    except TypeError as exc:
        raise InvalidTypeError(name, "a sequence of strings", texts) from exc
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise InvalidTypeError(f"{name}[{i}]", "a str", t)
    return out
