"""A user's own recognizers: registered by name, presidio recognizers and presidio's YAML format.

A recognizer the user adds (:func:`~private_vectors.text.registry.add_recognizer`) is wrapped in
a :class:`RegisteredRecognizer`: a configuration records it by name and version only (never its
patterns or deny list), and a stored text stage naming it is rebuilt from the registry of the
reopening process, which must have it. A presidio ``EntityRecognizer`` (a ``PatternRecognizer``
among them) is accepted as it is (:class:`PresidioRecognizer`), and so is presidio's YAML
recognizer file (:func:`presidio_yaml_recognizers`, read by presidio's own
``RecognizerRegistry.add_recognizers_from_yaml``).

presidio's ``AnalyzerEngine`` raises a span's score when one of the recognizer's context words
stands nearby (its context enhancer, which needs spaCy's lemmas); here a recognizer is called
without NLP artefacts, so its ``context`` words are recorded but do not change scores: set the
pattern scores you mean (and per-label ``thresholds`` on the ``Sanitizer``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import Described, InvalidParameterError, InvalidTypeError
from ..spans import Detector, Span, validate_texts
from ..traits import declared

__all__ = ["REGISTERED", "PresidioRecognizer", "RegisteredRecognizer", "is_presidio_recognizer",
           "presidio_yaml_recognizers"]

REGISTERED = "registered"
"""The config ``"type"`` of a recognizer added to the registry by name."""


class RegisteredRecognizer:
    """A user's recognizer under its registry name.

    Args:
        name: the registry name (also the name its spans carry).
        inner: the recognizer (``spans(texts)``).
    """

    def __init__(self, name: str, inner: Any) -> None:
        self.name = name
        self.inner = inner
        self.version = str(getattr(inner, "version", "1"))
        self.traits = declared(inner)

    def __repr__(self) -> str:
        return f"RegisteredRecognizer(name={self.name!r}, version={self.version!r})"

    @property
    def labels(self) -> tuple[str, ...]:
        """The labels the recognizer reports (as it declares them)."""
        return tuple(getattr(self.inner, "labels", None) or getattr(self.inner, "supported_entities", ()) or ())

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """The inner recognizer's spans, carrying the registry name."""
        found = self.inner.spans(texts)
        return [[Span(s.start, s.end, s.label, s.score, self.name) for s in spans] for spans in found]

    def get_config(self) -> dict[str, Any]:
        """Name and version only: the recognizer itself stays in the user's code."""
        return {"type": REGISTERED, "name": self.name, "version": self.version}


def is_presidio_recognizer(obj: Any) -> bool:
    """Whether ``obj`` is a presidio ``EntityRecognizer`` (imported only when presidio is installed)."""
    if not type(obj).__module__.startswith("presidio_analyzer") and not hasattr(obj, "supported_entities"):
        return False
    try:
        from presidio_analyzer import EntityRecognizer
    except ImportError:  # pragma: no cover - presidio is a dependency
        return False
    return isinstance(obj, EntityRecognizer)


class PresidioRecognizer:
    """A presidio ``EntityRecognizer`` (``PatternRecognizer``, a deny list, your own subclass) as
    a recognizer of the text stage: each text goes through its ``analyze(text, entities)``, each
    ``RecognizerResult`` becomes a span labelled with its entity type.

    Args:
        recognizer: the presidio recognizer, used as it is.
    """

    def __init__(self, recognizer: Any) -> None:
        if not is_presidio_recognizer(recognizer):
            raise InvalidTypeError("recognizer", "a presidio EntityRecognizer", recognizer)
        self.recognizer = recognizer
        self.name = str(recognizer.name)
        self.version = str(getattr(recognizer, "version", "1"))
        self.context = tuple(getattr(recognizer, "context", None) or ())
        self.traits = declared(recognizer)  # a PatternRecognizer without traits: "pattern"

    def __repr__(self) -> str:
        return f"PresidioRecognizer(name={self.name!r}, entities={list(self.labels)})"

    @property
    def labels(self) -> tuple[str, ...]:
        """The recognizer's supported entities."""
        return tuple(self.recognizer.supported_entities)

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """Spans per text (``nlp_artifacts=None``: see the module docstring)."""
        entities = list(self.labels)
        return [[Span(r.start, r.end, r.entity_type, float(r.score), self.name)
                 for r in self.recognizer.analyze(text, entities, None) or ()]
                for text in validate_texts(texts)]

    def get_config(self) -> dict[str, Any]:
        """Name and version (a registered recognizer records nothing else)."""
        return {"type": REGISTERED, "name": self.name, "version": self.version}


def presidio_yaml_recognizers(path: str | Path, language: str = "en") -> list[PresidioRecognizer]:
    """The recognizers of a presidio YAML recognizer file (``recognizers:`` with ``name``,
    ``supported_entity``, ``patterns``, ``deny_list``, ``context``), loaded by presidio itself;
    those of another ``supported_language`` are left out."""
    from presidio_analyzer import RecognizerRegistry

    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        raise InvalidParameterError("path", "a presidio YAML recognizer file", Described(str(path)))
    loaded = RecognizerRegistry(recognizers=[])
    loaded.add_recognizers_from_yaml(path)
    found = [PresidioRecognizer(r) for r in loaded.recognizers if getattr(r, "supported_language", language) == language]
    if not found:
        raise InvalidParameterError("path", f"a YAML file with at least one recognizer for language {language!r}",
                                    Described(str(path)))
    return found


def as_registered(recognizer: Any, name: str) -> Detector:
    """``recognizer`` as the registry keeps it under ``name``."""
    if is_presidio_recognizer(recognizer):
        recognizer = PresidioRecognizer(recognizer)
    return RegisteredRecognizer(name, recognizer)
