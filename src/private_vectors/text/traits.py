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

A recognizer that declares none is weighed as a guess, as before traits existed. A registered
recognizer (:mod:`.registry`) is looked up by its name; so are the built-in ones
(:data:`BUILTIN`) and the spans the stage makes itself: :data:`KEYED_INDEX` (found again by the
keyed entity index) and :data:`ON_ERROR_SPAN` (a failed recognizer's whole-text redaction), both
``"derived"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import InvalidParameterError
from .spans import Span

__all__ = ["BUILTIN", "DERIVED", "GENERAL", "KEYED_INDEX", "LEARNED", "MODEL", "ON_ERROR_SPAN", "PATTERN",
           "PRECISE", "SHAPED", "TRAITS", "WORD_LIST", "declare", "forget", "has", "traits_of"]

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


def declare(name: str, recognizer: object) -> frozenset[str]:
    """Record the traits ``recognizer`` declares (its ``traits`` attribute) under ``name``.

    Raises:
        InvalidParameterError: for a trait not in :data:`TRAITS` (or a bare string).
    """
    found = getattr(recognizer, "traits", None) or ()
    if isinstance(found, str) or not isinstance(found, Iterable) or not set(found) <= TRAITS:
        raise InvalidParameterError("recognizer.traits", f"a set of traits from {sorted(TRAITS)}", found)
    _DECLARED[name] = frozenset(found)
    return _DECLARED[name]


def forget(name: str) -> None:
    """Drop the traits recorded under ``name`` (the recognizer left the registry)."""
    _DECLARED.pop(name, None)


def traits_of(name: str) -> frozenset[str]:
    """The traits of the recognizer whose spans carry ``name``: a registered one's, else a
    built-in one's (:data:`BUILTIN`), else none (a guess)."""
    found = _DECLARED.get(name)
    if found is not None:
        return found
    return BUILTIN.get(name.partition(":")[0] if name.startswith("tagger:") else name, frozenset())


def has(span: Span, *traits: str) -> bool:
    """Whether the recognizer that found ``span`` declares any of ``traits``."""
    return not traits_of(span.detector).isdisjoint(traits)
