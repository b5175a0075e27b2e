"""What every recognizer is: a name, the labels it handles, a version, and one verb (``spans``).

A recognizer finds spans in a batch of texts; it decides nothing about what is replaced (the
span rules and the operators do). Its configuration (``get_config()``) is JSON-safe and names
its kind (``"type"``) and version, so a stored text stage is rebuilt from it
(``from_config``). This is presidio's ``EntityRecognizer`` split (name, supported entities,
version, context words, ``to_dict``/``from_dict``), batched: the text stage calls a recognizer
once per group of texts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ..spans import Span

__all__ = ["Recognizer"]


class Recognizer:
    """Base of the built-in recognizers.

    Attributes:
        kind: the registry name of the recognizer's type (``get_config()["type"]``).
        name: the name its spans carry (``Span.detector``); an instance may set its own.
        version: changes when what the recognizer finds does.
        context: words that make a nearby span more likely (informational, as presidio's).
        traits: what the rules may assume of its spans (:mod:`..traits`; none: a guess).
    """

    kind: ClassVar[str] = "recognizer"
    name: str = "recognizer"
    version: ClassVar[str] = "1"
    context: ClassVar[tuple[str, ...]] = ()
    traits: frozenset[str] = frozenset()

    @property
    def labels(self) -> tuple[str, ...]:
        """The labels this recognizer reports."""
        return tuple(getattr(self, "entities", ()))

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:  # pragma: no cover - interface
        """Spans per text."""
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        """JSON-safe: the kind, the version and what rebuilds this recognizer."""
        return {"type": self.kind, "version": self.version}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Recognizer:
        """Rebuild from :meth:`get_config` (the base takes no options)."""
        return cls()
