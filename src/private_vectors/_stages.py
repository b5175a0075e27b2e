"""The stages of a pipeline, built from resolved options: text stage, noise concept, query noise.

:func:`~private_vectors.pipeline.build_pipeline` calls these once, in order, with the options
:func:`~private_vectors.options.resolve_options` resolved; :class:`Stages` holds what they built.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from typing import Any

from .config import KEY_ENV
from .errors import InvalidParameterError, InvalidTypeError
from .keying import Keying
from .mechanisms import LaplaceMechanism, Mechanism
from .mechanisms.factory import build_mechanism
from .options import SPHERICAL, EmbeddingOptions
from .retrieval import QueryTransform

__all__ = ["Stages", "build_sanitizer", "load_noise_concept", "noise_concept", "query_mechanism"]

@dataclass(frozen=True)
class Stages:
    """The built stages of a pipeline, in the order a document meets them.

    Attributes:
        sanitizer: the text stage, or None.
        encoder: the encoder.
        erasure: the attribute erasure (an ``AttributeConcept``), or None.
        noise_concept: the noise concept the mechanism uses (a ``FittedConcept``), or None.
        mechanism: the documents' noise mechanism; ``mechanism_ref`` its JSON-safe reference.
        query_mechanism: the queries' own noise (``query="noised"``/``"keyed"``), or None.
        query_transform: the noise-aware query transform.
        geometry_bound: the augmentation bound M (``store_geometry="augment"``), else None.
        recorded_concept: a noise concept reference that a store written before 0.2 recorded
            beside spherical noise: it enters the configuration and the keyed-noise context (so
            that store's vectors reproduce) and is never loaded.
    """

    sanitizer: Any
    encoder: Any
    erasure: Any
    noise_concept: Any
    mechanism: Mechanism
    mechanism_ref: Any
    query_mechanism: Mechanism | None
    query_transform: QueryTransform
    geometry_bound: float | None
    recorded_concept: Any = None


def load_noise_concept(concept: Any, encoder: Any) -> Any:
    """A FittedConcept from a name, folder, stored reference or object."""
    if hasattr(concept, "mechanism") and hasattr(concept, "reference"):
        concept.check_encoder(encoder)
        return concept
    if not isinstance(concept, (str, os.PathLike, dict)):
        raise InvalidTypeError("noise_concept", "None, a built-in concept name, a fitted-concept folder or a "
                               "FittedConcept", concept)
    from .fitted import load_concept

    fitted = load_concept(concept, encoder)
    fitted.check_encoder(encoder)
    return fitted


def noise_concept(options: EmbeddingOptions, encoder: Any) -> tuple[Any, Any]:
    """(the loaded noise concept, a recorded-only reference): a noise concept is loaded only when
    ``noise_concept=`` asks for one; a stored reference beside spherical noise is recorded only."""
    given = options.noise_concept
    if given is None:
        return None, None
    if options.mechanism in SPHERICAL:
        if isinstance(given, dict):  # a stored configuration of a store written before 0.2
            return None, given
        warnings.warn(f"noise_concept={given!r} does not shape {options.mechanism!r} noise (the same in every "
                      "direction); use mechanism='mahalanobis' for concept-shaped noise", UserWarning, stacklevel=4)
    return load_noise_concept(given, encoder), None


def build_sanitizer(options: EmbeddingOptions, keying: Keying) -> Any:
    """The text stage for resolved ``options.sanitize`` (a policy name, a stored config, a Sanitizer), or None."""
    sanitize = options.sanitize
    if sanitize is None:
        return None
    if isinstance(sanitize, str):
        if sanitize == "surrogate" and not keying.keyed:
            raise InvalidParameterError(
                "key", f"a secret (key=... or env {KEY_ENV}) for sanitize='surrogate'", None,
                note="a surrogate without a key is a public substitution; use sanitize='redact' without a key")
        from .text import Sanitizer

        concept = options.text_concept
        return Sanitizer(list(concept) if isinstance(concept, tuple) else concept, policy=sanitize,
                         key=keying.secret, detector=options.detector, device=options.device)
    if isinstance(sanitize, dict):  # a stored Sanitizer config: its own detector (absent: "rules")
        from .text import Sanitizer

        return Sanitizer.from_config(sanitize, key=keying.secret, device=options.device)
    if all(callable(getattr(sanitize, m, None)) for m in ("apply", "apply_queries", "get_config")):
        return sanitize
    raise InvalidTypeError("sanitize", "one of ('redact', 'surrogate'), 'auto', None or a Sanitizer", sanitize)


def query_mechanism(options: EmbeddingOptions, ref: Any, mechanism: Mechanism, concept: Any, dim: int,
                     random: Any, model_id: str | None) -> Mechanism | None:
    """The query's own noise: the documents' family at ``query_eps``; spherical Laplace in the
    output space of learned mechanisms and instances (per RMS coordinate of that space)."""
    if options.query == "clean":
        return None
    eps = float(options.query_eps)  # type: ignore[arg-type]
    if isinstance(ref, str):
        return build_mechanism(ref, eps=eps, eps_given=True, unit=options.unit, dim=dim, concept=concept,
                               random_state=random, model_id=model_id)[1]
    out_dim = int(mechanism.output_dim(dim))
    return LaplaceMechanism(epsilon=eps, unit=1.0 / math.sqrt(out_dim), dim=out_dim, random_state=random)
