"""What a recognizer declares about its spans (its **traits**), which the span rules read.

A rule never tests a recognizer's name: it asks what kind of evidence a span is, by the traits
of the recognizer that found it. A recognizer declares them as an attribute, ``traits`` (a set
of the names below), as presidio's recognizers declare ``supported_entities`` and ``version``:

* ``"learned"`` (:data:`LEARNED`): a learned, case-blind tagger; its score is a probability, not
  a cue's boost, and it errs on other words than the case-reading models (the built-in tagger);
* ``"pattern"`` (:data:`PATTERN`): a validated pattern (a shape and a cue or a checksum), not a
  guess (the regexes, the identifiers);
* ``"precise"`` (:data:`PRECISE`): a strict format whose label is certain (an e-mail address, a
  validated phone number): it gives a merged span its label, keeps the label it had at ingest
  and is never read as a name or an ordinary word (the regexes);
* ``"model"`` (:data:`MODEL`): a statistical model's one-word guesses (presidio's spaCy, a
  concept's spaCy labels);
* ``"general"`` (:data:`GENERAL`): a general-purpose model reading every text for names (presidio):
  a full name it alone reports is no personal context;
* ``"word-list"`` (:data:`WORD_LIST`): a vocabulary's one-word guesses (the city list);
* ``"shaped"`` (:data:`SHAPED`): names from a name pool and a word's shape (the name recognizer),
  weighed as a model's one-word guesses in long texts only.

A recognizer that declares none is weighed as a guess, as before traits existed; a presidio
``PatternRecognizer`` that declares none is a ``"pattern"``. A registered recognizer
(:mod:`.registry`) is looked up by its name; so are the built-in ones (:data:`BUILTIN`) and the
spans the stage makes itself: :data:`KEYED_INDEX` (found again by the keyed entity index) and
:data:`ON_ERROR_SPAN` (a failed recognizer's whole-text redaction), both ``"derived"``. A text
stage's own recognizer objects (``Sanitizer(detectors=[...])``, not registered) are looked up
first, by the name their spans carry, while the stage reads spans (:func:`reading`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType

from ..errors import InvalidParameterError
from .spans import Span

__all__ = ["BUILTIN", "DERIVED", "GENERAL", "KEYED_INDEX", "LEARNED", "MODEL", "ON_ERROR_SPAN", "PATTERN",
           "PRECISE", "SHAPED", "TRAITS", "WORD_LIST", "declare", "declared", "forget", "has", "reading", "traits_of"]

LEARNED, PATTERN, PRECISE, MODEL, GENERAL, WORD_LIST, SHAPED = \
    "learned", "pattern", "precise", "model", "general", "word-list", "shaped"
DERIVED = "derived"
"""Spans the text stage made itself, not a recognizer (never declared by one)."""
TRAITS = frozenset([LEARNED, PATTERN, PRECISE, MODEL, GENERAL, WORD_LIST, SHAPED])
"""The traits a recognizer may declare."""
KEYED_INDEX, ON_ERROR_SPAN = "keyed-index", "on_error"
"""The detector names of the spans the stage makes itself (see the module docstring)."""

BUILTIN: Mapping[str, frozenset[str]] = {
    "regex": frozenset([PATTERN, PRECISE]), "identifiers": frozenset([PATTERN]),
    "presidio": frozenset([MODEL, GENERAL]), "ner": frozenset([MODEL]),
    "names": frozenset([SHAPED]), "places": frozenset([WORD_LIST]), "tagger": frozenset([LEARNED]),
    KEYED_INDEX: frozenset([DERIVED]), ON_ERROR_SPAN: frozenset([DERIVED]),
}
"""The traits of the built-in recognizers' span names (``"tagger:<name>"``, a user's tagger, is a
``"tagger"``); each recognizer class declares the same as its ``traits``."""

_DECLARED: dict[str, frozenset[str]] = {}
"""Registered recognizers' traits by name: written by :mod:`.registry` only (under its lock), as
it adds or removes a recognizer; part of the registry's process-wide state."""


_OWN: contextvars.ContextVar[Mapping[str, frozenset[str]]] = contextvars.ContextVar(
    "private_vectors_stage_traits", default=MappingProxyType({}))
"""The running text stage's own recognizer objects' traits by span name (:func:`reading`)."""


def declared(recognizer: object, where: str = "recognizer.traits") -> frozenset[str]:
    """The traits ``recognizer`` declares (its ``traits`` attribute; a presidio
    ``PatternRecognizer`` without one: ``"pattern"``).

    Raises:
        InvalidParameterError: for a trait not in :data:`TRAITS` (or a bare string), naming ``where``.
    """
    found = getattr(recognizer, "traits", None)
    if found is None and any(c.__name__ == "PatternRecognizer" and c.__module__.startswith("presidio_analyzer")
                             for c in type(recognizer).__mro__):
        return frozenset([PATTERN])
    if isinstance(found, str) or not isinstance(found or (), Iterable) or not set(found or ()) <= TRAITS:
        raise InvalidParameterError(where, f"a set of traits from {sorted(TRAITS)}", found)
    return frozenset(found or ())


def declare(name: str, recognizer: object) -> frozenset[str]:
    """Record the traits ``recognizer`` declares (:func:`declared`) under ``name``."""
    _DECLARED[name] = declared(recognizer)
    return _DECLARED[name]


@contextmanager
def reading(own: Mapping[str, frozenset[str]]) -> Iterator[None]:
    """While the block runs, spans named in ``own`` have the traits it gives them (a text stage's
    own recognizer objects, which no registry holds)."""
    token = _OWN.set(own)
    try:
        yield
    finally:
        _OWN.reset(token)


def forget(name: str) -> None:
    """Drop the traits recorded under ``name`` (the recognizer left the registry)."""
    _DECLARED.pop(name, None)


def traits_of(name: str) -> frozenset[str]:
    """The traits of the recognizer whose spans carry ``name``: a registered one's, else a
    built-in one's (:data:`BUILTIN`), else none (a guess); first the running stage's own (:func:`reading`)."""
    found = _OWN.get().get(name, _DECLARED.get(name))
    if found is not None:
        return found
    return BUILTIN.get(name.partition(":")[0] if name.startswith("tagger:") else name, frozenset())


def has(span: Span, *traits: str) -> bool:
    """Whether the recognizer that found ``span`` declares any of ``traits``."""
    return not traits_of(span.detector).isdisjoint(traits)
