"""What a user asks of a :class:`~private_vectors.PrivateEmbedding`, validated once and resolved once.

:class:`EmbeddingOptions` holds the constructor's arguments as written (never the key, never a
seed) and validates each of them; :func:`resolve_options` is the one pure function that fills in
every default, so the whole rule set is one table (tested as a table in ``tests/test_options.py``).
The stages are then built from the resolved values and never derive them again
(:func:`~private_vectors.pipeline.build_pipeline`).

=====================  ==========================================================
argument               default
=====================  ==========================================================
``eps``                10 (with a :class:`~private_vectors.errors.PrivacyWarning`);
                       a mechanism instance or learned folder: its own ε
``sanitize``           ``"redact"`` when a text concept is given, else None
``text_concept``       ``"PII"`` when a text-stage policy is asked for without one
``mechanism``          ``"mahalanobis"`` with a noise concept, else ``"laplace"``
``unit``               1/√n, n the encoder's dimension
``query_eps``          ``eps``
``space``              ``"cosine"`` for spherical noise (or ``query_transform="none"``),
                       ``"ip"`` for concept noise with a noise-aware query transform
``store_geometry``     ``"normalize"`` in cosine, ``"augment"`` in ip, ``"none"`` in l2
``erase``              a built-in name: that attribute with the default erasure method
                       (:data:`~private_vectors.fitted.erase.DEFAULT_METHOD`)
``seal``               a :class:`~private_vectors.sealed.Sealing` when keyed, else False
                       (:func:`~private_vectors.sealed.options.resolve_sealing`)
=====================  ==========================================================

One word, one meaning: ``concept`` (also ``text_concept``) is what the text stage replaces —
a preset (``"PII"``, ``"PHI"``, ``"quasi"``), a built-in span concept (``"person"``,
``"medical"``, ...) or a list of them. An attribute erased from the vectors is ``erase``
(``"sex"``, ``{"attribute": "sex", "method": "leace"}``, a fitted folder;
:mod:`private_vectors.fitted.erase`); a fitted concept that shapes the noise is
``noise_concept``. Neither is loaded or fitted unless asked for by its own parameter.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, replace
from typing import Any

from ._validation import check_choice, check_positive_finite
from .config import SPHERICAL_NAMES
from .errors import InvalidParameterError, InvalidTypeError
from .retrieval import QUERY_TRANSFORMS, SPACES, STORE_GEOMETRIES, is_spherical
from .sealed.options import check_seal, resolve_sealing

__all__ = [
    "DEFAULT_EPS",
    "DEFAULT_TEXT_CONCEPT",
    "QUERY_POLICIES",
    "SANITIZE_POLICIES",
    "SPHERICAL",
    "EmbeddingOptions",
    "check_choice",
    "check_text_concept",
    "concept_parts",
    "resolve_options",
    "split_concept",
    "text_concept_names",
]

QUERY_POLICIES = ("clean", "noised", "keyed")
SANITIZE_POLICIES = ("redact", "surrogate")
"""Text-stage policies ``sanitize=`` accepts by name."""
DEFAULT_EPS = 10.0
DEFAULT_TEXT_CONCEPT = "PII"
SPHERICAL = SPHERICAL_NAMES
"""Mechanism names whose noise is the same in every direction (no query transform applies)."""


# -- concept: the text concept, and the deprecated routes to erase= / noise_concept= ---------------
def text_concept_names() -> tuple[str, ...]:
    """Every name ``concept=`` accepts: the presets, then the built-in span concepts."""
    from .fitted.spec import BUILTIN_CONCEPTS
    from .text.presets import PRESETS

    return tuple(dict.fromkeys((*PRESETS, *BUILTIN_CONCEPTS)))


def _text_concept_expected() -> str:
    names = text_concept_names()
    return ("a text concept: one of " + ", ".join(repr(n) for n in names)
            + " (case-insensitive), or a non-empty list of them (composed in one pass)")


def _known_text_concept(name: Any) -> bool:
    return isinstance(name, str) and name.strip().lower() in {n.lower() for n in text_concept_names()}


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


def _is_fitted(concept: Any) -> bool:
    """A fitted noise concept: an object, a stored reference or a folder (never a bare name)."""
    if hasattr(concept, "mechanism") and hasattr(concept, "reference"):
        return True
    if isinstance(concept, (dict, os.PathLike)):
        return True
    return isinstance(concept, str) and (os.sep in concept or "/" in concept or os.path.isdir(concept))


def _is_text_concept_object(concept: Any) -> bool:
    from .text.concepts import TextConcept

    return isinstance(concept, TextConcept)


def check_text_concept(value: Any, parameter: str = "text_concept") -> Any:
    """``value`` if it names what the text stage replaces (a list becomes a tuple), else an error
    naming ``parameter`` and every accepted name."""
    if isinstance(value, str) and _known_text_concept(value):
        return value
    if isinstance(value, (list, tuple)):
        unknown = [n for n, c in enumerate(value) if not _known_text_concept(c)]
        if value and not unknown:
            return tuple(value)
        raise InvalidParameterError(parameter, _text_concept_expected(), list(value),
                                    note=f"not a text concept: the item at position {unknown[0]}" if unknown
                                    else "the list is empty")
    if _is_text_concept_object(value):
        return value
    if isinstance(value, str):
        raise InvalidParameterError(parameter, _text_concept_expected(), value)
    raise InvalidTypeError(parameter, _text_concept_expected(), value)


def split_concept(concept: Any, *, warn: bool = True) -> dict[str, Any]:
    """Map the ``concept`` argument onto ``text_concept`` (its meaning) or, deprecated,
    ``erase`` / ``noise_concept``.

    A text concept (a preset, a built-in span concept, a list of them, a ``TextConcept``) is the
    text concept, and nothing else: no noise concept comes with it. An attribute (``"sex"``, an
    ``AttributeConcept``, its folder) goes to ``erase`` and a fitted concept (a ``FittedConcept``,
    a stored reference, a folder) to ``noise_concept``, each with a ``DeprecationWarning`` when
    ``warn``. Anything else is refused, naming every accepted text concept.
    """
    if concept is None:
        return {}
    if (isinstance(concept, str) and _known_text_concept(concept)) or isinstance(concept, (list, tuple)):
        return {"text_concept": check_text_concept(concept, "concept")}
    if isinstance(concept, (bytes, bytearray, int, float, bool)):
        raise InvalidTypeError("concept", _text_concept_expected(), concept)
    if _is_attribute(concept):
        target = "erase"
    elif _is_fitted(concept):
        target = "noise_concept"
    else:
        return {"text_concept": check_text_concept(concept, "concept")}  # a TextConcept, or refused
    if warn:
        warnings.warn(f"concept= with an attribute or fitted concept is deprecated: pass {target}= instead",
                      DeprecationWarning, stacklevel=3)
    return {target: concept}


def concept_parts(concept: Any, *, mechanism: Any = None, **explicit: Any) -> dict[str, Any]:
    """``concept`` mapped by :func:`split_concept`, then the explicit ``text_concept`` / ``erase`` /
    ``noise_concept`` (a conflict with ``concept`` is refused).

    ``mechanism="mahalanobis"`` without a noise concept takes a single built-in text concept name
    as its noise concept too, with a ``DeprecationWarning`` (earlier versions read ``concept=``
    that way): pass ``noise_concept=`` instead.
    """
    parts = split_concept(concept)
    for name, value in explicit.items():
        if value is None:
            continue
        if name == "text_concept":
            value = check_text_concept(value)
        if name in parts and parts[name] != value:
            raise InvalidParameterError(name, f"the same value as concept= or concept= left out "
                                        f"(concept= gives {name}={parts[name]!r})", value)
        parts[name] = value
    concept_name = parts.get("text_concept")
    if (isinstance(mechanism, str) and mechanism.lower() == "mahalanobis" and "noise_concept" not in parts
            and isinstance(concept_name, str) and _has_noise_concept(concept_name)):
        warnings.warn(f"mechanism='mahalanobis' takes its noise concept from noise_concept=...; "
                      f"concept={concept_name!r} was read as noise_concept={concept_name!r} too (deprecated)",
                      DeprecationWarning, stacklevel=3)
        parts["noise_concept"] = concept_name
    return parts


def _has_noise_concept(name: str) -> bool:
    from .fitted.spec import BUILTIN_CONCEPTS

    return name.strip().lower() in {b.lower() for b in BUILTIN_CONCEPTS}


# -- the options ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EmbeddingOptions:
    """The validated arguments of a ``PrivateEmbedding`` (see its docstring for each), as written;
    :func:`resolve_options` returns a copy with every default filled in.

    ``geometry_bound`` is the augmentation bound M a stored configuration records (None: the
    pipeline measures it from the mechanism). ``seal`` as written is None, True, False or a
    :class:`~private_vectors.sealed.Sealing`; resolved, a ``Sealing`` or False (not sealed).
    """

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
    geometry_bound: float | None = None
    seal: Any = None
    detector: str | None = None
    device: str = "cpu"

    def __post_init__(self) -> None:
        _check_mechanism(self.mechanism)
        _check_detector(self.detector, self.device, self.sanitize)
        object.__setattr__(self, "seal", check_seal(self.seal))
        if self.erase is not None:
            from .fitted.erase import check_erase

            object.__setattr__(self, "erase", check_erase(self.erase))
        check_choice(self.query, "query", QUERY_POLICIES)
        check_choice(self.query_transform, "query_transform", QUERY_TRANSFORMS)
        if self.space is not None:
            check_choice(self.space, "space", SPACES)
        geometry = self.store_geometry
        if isinstance(geometry, dict):  # a stored config: {"kind", "M"}
            object.__setattr__(self, "store_geometry", geometry.get("kind", "none"))
            if geometry.get("M") is not None and self.geometry_bound is None:
                object.__setattr__(self, "geometry_bound", geometry["M"])
        check_choice(self.store_geometry, "store_geometry", STORE_GEOMETRIES)
        for name in ("eps", "query_eps", "unit", "geometry_bound"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, check_positive_finite(value, name))
        if isinstance(self.text_concept, list):
            object.__setattr__(self, "text_concept", tuple(self.text_concept))
        if isinstance(self.sanitize, str) and self.sanitize != "auto" and self.sanitize not in SANITIZE_POLICIES:
            raise InvalidParameterError("sanitize", f"one of {SANITIZE_POLICIES}, 'auto', None or a Sanitizer",
                                        self.sanitize)

    @property
    def eps_given(self) -> bool:
        """Whether ε was given (of options as written; resolved options always have one)."""
        return self.eps is not None


def _check_detector(detector: Any, device: Any, sanitize: Any) -> None:
    """``detector``: None (the concept's default), ``"rules"`` or ``"model"``, given for a text stage
    this function builds (a ``Sanitizer`` passed as ``sanitize=`` carries its own); ``device``: a name."""
    from .text.stage_options import DETECTORS

    if detector is not None:
        check_choice(detector, "detector", DETECTORS)
        if sanitize is not None and not isinstance(sanitize, (str, dict)):
            raise InvalidParameterError("detector", "None when sanitize= is a Sanitizer (give detector= to the "
                                        "Sanitizer instead)", detector)
    if not isinstance(device, str) or not device:
        raise InvalidTypeError("device", "a torch device name such as 'cpu' or 'cuda'", device)


def _check_mechanism(mechanism: Any) -> None:
    """None, a mechanism name, a CAPE/TextCrafter folder or packaged name, or a Mechanism."""
    from .mechanisms.factory import LEARNED_TYPES, MECHANISMS, carries_own_parameters

    expected = f"one of {(*MECHANISMS, *LEARNED_TYPES)}, a Mechanism or a learned-encoder folder"
    if mechanism is None or carries_own_parameters(mechanism) or hasattr(mechanism, "perturb"):
        return
    if not isinstance(mechanism, str):
        raise InvalidTypeError("mechanism", expected, mechanism)
    if mechanism.lower() not in MECHANISMS:
        raise InvalidParameterError("mechanism", expected, mechanism)


def _store_geometry(kind: str, space: str) -> str:
    """``"auto"``: ``"normalize"`` for a cosine ranking (spherical noise), ``"augment"`` for an
    inner-product ranking (noise-aware query transform), ``"none"`` when ``space="l2"`` is asked."""
    if kind != "auto":
        return kind
    return {"cosine": "normalize", "ip": "augment"}.get(space, "none")


def _mechanism_name(mechanism: Any) -> str | None:
    return mechanism.lower() if isinstance(mechanism, str) else None


def _own_eps(mechanism: Any) -> float | None:
    eps = getattr(mechanism, "epsilon", None)
    return float(eps) if isinstance(eps, (int, float)) and not isinstance(eps, bool) and eps > 0 else None


def resolve_options(options: EmbeddingOptions, *, dim: int, mechanism: Any = None,
                    keyed: bool = False) -> EmbeddingOptions:
    """Every default, resolved (a pure function): the table of this module.

    Args:
        options: what the user gave.
        dim: the encoder's dimension (``unit`` defaults to 1/√dim).
        mechanism: the mechanism built from ``options.mechanism`` when that is an instance or a
            learned (CAPE/TextCrafter) folder or name: its own ε and the shape of its noise decide
            ``eps``, ``query_eps`` and ``space``. None for a mechanism named by the options.
        keyed: whether the function has a key (``seal`` defaults to sealed with one).

    Returns:
        A copy in which ``eps``, ``sanitize``, ``mechanism``, ``unit``, ``query_eps``, ``space``
        ``store_geometry`` and ``seal`` are set (``text_concept`` too when a text-stage policy is asked for);
        a built-in ``erase`` name becomes an :class:`~private_vectors.fitted.erase.ErasureSpec` with the
        default method.

    Raises:
        ValueError: ``options.mechanism`` is an instance or a folder and ``mechanism`` is missing.
    """
    name = _mechanism_name(options.mechanism)
    built = mechanism if mechanism is not None else (None if name is not None or options.mechanism is None
                                                     else options.mechanism)
    if built is not None and not hasattr(built, "perturb"):
        raise ValueError("resolve_options: pass the built mechanism for a learned folder (mechanism=...)")
    if built is None and name is not None and name not in (*SPHERICAL, "mahalanobis"):
        raise ValueError(f"resolve_options: pass the built mechanism for mechanism={options.mechanism!r}")
    eps = (_own_eps(built) if built is not None else None) or options.eps or DEFAULT_EPS
    sanitize = options.sanitize
    if isinstance(sanitize, str) and sanitize == "auto":
        sanitize = "redact" if options.text_concept is not None else None
    text_concept = options.text_concept
    if text_concept is None and isinstance(sanitize, str):
        text_concept = DEFAULT_TEXT_CONCEPT
    if built is None:
        name = name or ("mahalanobis" if options.noise_concept is not None else "laplace")
    unit = options.unit if options.unit is not None else 1.0 / math.sqrt(dim)
    if math.isclose(unit, 1.0 / math.sqrt(dim), rel_tol=1e-12):
        unit = 1.0 / math.sqrt(dim)  # the default, possibly one ulp off after a store's JSON round trip
    space = options.space
    if space is None:
        if options.query_transform == "none":
            space = "cosine"
        elif built is not None:
            identity = options.query_transform == "auto" and is_spherical(built)
            space = "cosine" if identity else "ip"
        else:
            space = "cosine" if name in SPHERICAL else "ip"
    erase = options.erase
    if erase is not None:
        from .fitted.erase import resolve_erase

        erase = resolve_erase(erase)
    return replace(options, eps=eps, sanitize=sanitize, text_concept=text_concept, erase=erase,
                   mechanism=built if built is not None else name, unit=unit, space=space,
                   store_geometry=_store_geometry(options.store_geometry, space),
                   query_eps=options.query_eps or eps, seal=resolve_sealing(options.seal, keyed=keyed) or False)
