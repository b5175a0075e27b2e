"""What a user asks of a :class:`~private_vectors.PrivateEmbedding`, validated and frozen.

:class:`EmbeddingOptions` holds the constructor's arguments (never the key, never a seed);
:func:`resolve_options` is the one pure function that fills in every default that depends on
another argument, so the whole rule set is one table (tested as a table in
``tests/test_options.py``):

=====================  ==========================================================
argument               default
=====================  ==========================================================
``eps``                10 (with a :class:`~private_vectors.errors.PrivacyWarning`)
``sanitize``           ``"redact"`` when a text concept is given, else None
``mechanism``          ``"laplace"``; ``"mahalanobis"`` with a fitted noise concept
                       and no text concept
``query_eps``          ``eps`` (of the built mechanism for an instance or learned folder)
``space``              ``"cosine"`` for spherical noise (or ``query_transform="none"``),
                       ``"ip"`` for concept noise with a noise-aware query transform
``store_geometry``     ``"normalize"`` in cosine, ``"augment"`` in ip, ``"none"`` in l2
``erase``              a built-in name: that attribute with the default erasure method
                       (:data:`~private_vectors.fitted.attribute.DEFAULT_METHOD`)
=====================  ==========================================================

Three separate parameters say what is protected where: ``text_concept`` (spans the text stage
replaces: ``"PII"``, ``["PII", "medical"]``), ``erase`` (an attribute erased from the vectors:
``"sex"``, ``{"attribute": "sex", "method": "leace"}``, a fitted folder;
:mod:`private_vectors.fitted.erase`) and ``noise_concept`` (a fitted concept that shapes the noise). The older single ``concept`` parameter is mapped by :func:`split_concept`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from typing import Any

from ._validation import check_positive_finite
from .errors import InvalidParameterError, InvalidTypeError
from .retrieval import QUERY_TRANSFORMS, SPACES, STORE_GEOMETRIES, resolve_store_geometry

__all__ = [
    "DEFAULT_EPS",
    "DEFAULT_SPACE",
    "QUERY_POLICIES",
    "SANITIZE_POLICIES",
    "EmbeddingOptions",
    "check_choice",
    "concept_parts",
    "is_span_concept",
    "resolve_options",
    "split_concept",
]

QUERY_POLICIES = ("clean", "noised", "keyed")
SANITIZE_POLICIES = ("redact", "surrogate")
"""Text-stage policies ``sanitize=`` accepts by name."""
DEFAULT_EPS = 10.0
DEFAULT_SPACE = "ip"
"""Space of concept noise with a noise-aware query transform; spherical noise uses ``"cosine"``."""
SPHERICAL = ("laplace", "purkayastha", "gaussian", "none")
"""Mechanism names whose noise is the same in every direction (no query transform applies)."""


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``, else a clear error naming ``name``."""
    if not isinstance(value, str):
        raise InvalidTypeError(name, f"one of {choices}", value)
    if value not in choices:
        raise InvalidParameterError(name, f"one of {choices}", value)
    return value


def is_span_concept(concept: Any) -> bool:
    """Whether ``concept`` names what the text stage detects: a preset (``"PII"``, ``"PHI"``,
    ``"quasi"``), a built-in span concept, or a non-empty list of them."""
    from .text.presets import is_text_concept

    return is_text_concept(concept)


def _has_fitted_concept(name: str) -> bool:
    from .fitted.spec import BUILTIN_CONCEPTS

    return name.strip().lower() in {b.lower() for b in BUILTIN_CONCEPTS}


def _is_attribute(concept: Any) -> bool:
    from .fitted.attribute import BUILTIN_ATTRIBUTES, AttributeConcept, is_attribute_folder
    from .fitted.erase import ErasureSpec

    if isinstance(concept, (AttributeConcept, ErasureSpec)):
        return True
    if isinstance(concept, dict):
        return concept.get("kind") == "attribute" or ("attribute" in concept and "kind" not in concept)
    if isinstance(concept, str) and concept in BUILTIN_ATTRIBUTES:
        return True
    return is_attribute_folder(concept)


def split_concept(concept: Any, *, warn: bool = True) -> dict[str, Any]:
    """Map the single ``concept`` argument onto ``text_concept`` / ``erase`` / ``noise_concept``.

    A text concept (``"PII"``, ``"PHI"``, ``"person"``, …, or a list of them) is the text concept;
    a single name with a shipped fitted concept also records it as the noise concept (the stored
    configuration of earlier versions, which the noise key derivation depends on). An attribute
    concept is ``erase``; anything else (a fitted folder, a ``FittedConcept``, a stored
    reference) is ``noise_concept``. The last two emit a ``DeprecationWarning`` when ``warn``.
    """
    if concept is None:
        return {}
    if is_span_concept(concept):
        if isinstance(concept, str) and _has_fitted_concept(concept):
            return {"text_concept": concept, "noise_concept": concept}
        return {"text_concept": concept if isinstance(concept, str) else tuple(concept)}
    if isinstance(concept, (list, tuple)):
        raise InvalidParameterError("concept", "a built-in span concept name or a list of them "
                                    "('PII', 'PHI', 'quasi', 'person', 'location', 'datetime', 'demographic', "
                                    "'medical')", concept)
    if isinstance(concept, (bytes, bytearray, int, float, bool)):
        raise InvalidTypeError("concept", "None, a built-in concept name, a list of them, an attribute or a "
                               "fitted concept", concept)
    target = "erase" if _is_attribute(concept) else "noise_concept"
    if warn:
        warnings.warn(f"concept= with an attribute or fitted concept is deprecated: pass {target}= instead",
                      DeprecationWarning, stacklevel=3)
    return {target: concept}


def concept_parts(concept: Any, **explicit: Any) -> dict[str, Any]:
    """``concept`` mapped by :func:`~private_vectors.options.split_concept`, then the explicit
    ``text_concept`` / ``erase`` / ``noise_concept`` (a conflict with ``concept`` is refused)."""
    parts = split_concept(concept)
    for name, value in explicit.items():
        if value is None:
            continue
        if name in parts and parts[name] != value:
            raise InvalidParameterError(name, f"the same value as concept= or concept= left out "
                                        f"(concept= gives {name}={parts[name]!r})", value)
        parts[name] = value
    return parts


@dataclass(frozen=True)
class EmbeddingOptions:
    """The validated arguments of a ``PrivateEmbedding`` (see its docstring for each)."""

    text_concept: Any = None
    erase: Any = None
    noise_concept: Any = None
    eps: float | None = None
    model: Any = None
    mechanism: Any = None
    query: str = "clean"
    query_eps: float | None = None
    query_transform: str = "auto"
    unit: float | None = None
    space: str | None = None
    store_geometry: Any = "auto"
    sanitize: Any = "auto"

    def __post_init__(self) -> None:
        if self.erase is not None:
            from .fitted.erase import check_erase

            object.__setattr__(self, "erase", check_erase(self.erase))
        check_choice(self.query, "query", QUERY_POLICIES)
        check_choice(self.query_transform, "query_transform", QUERY_TRANSFORMS)
        if self.space is not None:
            check_choice(self.space, "space", SPACES)
        if not isinstance(self.store_geometry, dict):
            check_choice(self.store_geometry, "store_geometry", STORE_GEOMETRIES)
        for name in ("eps", "query_eps", "unit"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, check_positive_finite(value, name))
        if isinstance(self.text_concept, list):
            object.__setattr__(self, "text_concept", tuple(self.text_concept))
        if isinstance(self.sanitize, str) and self.sanitize != "auto" and self.sanitize not in SANITIZE_POLICIES:
            raise InvalidParameterError("sanitize", f"one of {SANITIZE_POLICIES}, 'auto', None or a Sanitizer",
                                        self.sanitize)


def _mechanism_name(mechanism: Any) -> str | None:
    return mechanism.lower() if isinstance(mechanism, str) else None


def resolve_options(options: EmbeddingOptions, *, dim: int | None = None) -> EmbeddingOptions:
    """Every default that depends on another argument, resolved (a pure function).

    Args:
        options: what the user gave.
        dim: the encoder's dimension; resolves ``unit`` to 1/√dim when given.

    Returns:
        A copy in which ``eps``, ``sanitize``, ``mechanism`` and ``query_eps`` are always set,
        and ``unit``, ``space`` and ``store_geometry`` are set wherever the arguments decide them
        (a mechanism instance or a learned folder decides the space once built); a built-in
        ``erase`` name becomes an :class:`~private_vectors.fitted.erase.ErasureSpec` with the
        default method.
    """
    eps = DEFAULT_EPS if options.eps is None else options.eps
    sanitize = options.sanitize
    if isinstance(sanitize, str) and sanitize == "auto":
        sanitize = "redact" if options.text_concept is not None else None
    mechanism = options.mechanism
    if mechanism is None:
        fitted_only = options.noise_concept is not None and options.text_concept is None
        mechanism = "mahalanobis" if fitted_only else "laplace"
    unit = options.unit if options.unit is not None or dim is None else 1.0 / math.sqrt(dim)
    space = options.space
    name = _mechanism_name(mechanism)
    if space is None:
        if name in SPHERICAL or options.query_transform == "none":
            space = "cosine"
        elif name == "mahalanobis":
            space = DEFAULT_SPACE
    geometry = options.store_geometry
    if space is not None and not isinstance(geometry, dict):
        geometry = resolve_store_geometry(geometry, space)
    query_eps = options.query_eps
    if query_eps is None and (name in SPHERICAL or name == "mahalanobis"):  # else the built mechanism's ε
        query_eps = eps
    erase = options.erase
    if erase is not None:
        from .fitted.erase import resolve_erase

        erase = resolve_erase(erase)
    return replace(options, eps=eps, sanitize=sanitize, mechanism=mechanism, unit=unit, space=space,
                   store_geometry=geometry, query_eps=query_eps, erase=erase)
