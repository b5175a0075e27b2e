"""Building a mechanism from what a user writes: a name, a CAPE/TextCrafter folder or an instance.

:func:`build_mechanism` returns the mechanism and a JSON-safe reference to it (what
``PrivateEmbedding.get_config()`` records); :func:`load_learned` loads a saved learned
perturbation, dispatching on its ``config.json`` ``"type"``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..errors import ArtefactError, InvalidParameterError, InvalidTypeError
from .base import Mechanism
from .cape import CapeEncoder
from .gaussian import GaussianMechanism
from .identity import IdentityMechanism
from .laplace import LaplaceMechanism
from .learned import CONFIG_FILE, LearnedMechanism, packaged_artefact, read_artefact
from .purkayastha import PurkayasthaMechanism
from .textcrafter import TextCrafter

__all__ = [
    "GAUSSIAN_DELTA",
    "GAUSSIAN_SENSITIVITY",
    "LEARNED_TYPES",
    "MECHANISMS",
    "build_mechanism",
    "is_learned_folder",
    "load_learned",
]

MECHANISMS = ("mahalanobis", "laplace", "purkayastha", "gaussian", "none")
"""Mechanism names ``PrivateEmbedding(mechanism=...)`` accepts."""
GAUSSIAN_DELTA = 1e-5
GAUSSIAN_SENSITIVITY = 2.0  # max L2 distance between unit vectors
LEARNED_TYPES: dict[str, type[LearnedMechanism]] = {"cape": CapeEncoder, "textcrafter": TextCrafter}


def load_learned(path: str | Path, **overrides: Any) -> LearnedMechanism:
    """Load a saved CAPE or TextCrafter artefact, dispatching on ``config.json`` ``"type"``.

    Args:
        path: an artefact folder, or ``"cape"`` / ``"textcrafter"`` for the packaged
            pre-trained artefact of the default model (all-MiniLM-L6-v2).
        **overrides: inference parameters to change on load (CAPE: ``epsilon``;
            TextCrafter: ``radius``; both: ``random_state``, ``device``).

    Raises:
        ArtefactError: missing, corrupt or unknown artefact.
    """
    if isinstance(path, str) and path in LEARNED_TYPES and not Path(path).exists():
        path = packaged_artefact(path)
    if not isinstance(path, (str, Path)):
        raise InvalidTypeError("path", "an artefact folder path, 'cape' or 'textcrafter'", path)
    config, _ = read_artefact(path)
    kind = config["type"]
    if kind not in LEARNED_TYPES:
        raise ArtefactError(f"artefact {str(path)!r} has unknown type {kind!r} (known: {sorted(LEARNED_TYPES)})")
    return LEARNED_TYPES[kind].load(path, **overrides)


def is_learned_folder(value: Any) -> bool:
    """Whether ``value`` is a folder holding a CAPE/TextCrafter ``config.json``."""
    if not isinstance(value, (str, os.PathLike)):
        return False
    path = Path(value)
    if not (path.is_dir() and (path / CONFIG_FILE).is_file()):
        return False
    try:
        kind = json.loads((path / CONFIG_FILE).read_text()).get("type")
    except (OSError, ValueError):
        return False
    return kind in LEARNED_TYPES


def build_mechanism(mechanism: Any, *, eps: float, eps_given: bool, unit: float, dim: int, concept: Any,
                    random_state: Any) -> tuple[Any, Mechanism]:
    """(JSON-safe reference, mechanism instance) for ``mechanism``.

    Args:
        mechanism: None (``"mahalanobis"`` with a concept, ``"laplace"`` without), one of
            :data:`MECHANISMS`, a :class:`Mechanism` instance, or a CAPE/TextCrafter folder.
        eps: ε per ``unit`` of distance.
        eps_given: whether the user gave ε (a CAPE folder then runs at ``eps``; otherwise a
            learned folder keeps its own ε/radius).
        unit: distance unit of ε.
        dim: input dimension.
        concept: a fitted concept (``concept.mechanism(epsilon=, unit=, random_state=)``) or None.
        random_state: a resolved random source shared by the mechanisms built here.
    """
    if isinstance(mechanism, Mechanism):
        return {"type": "instance", "class": type(mechanism).__name__, "params": mechanism.get_params()}, mechanism
    if mechanism is None:
        mechanism = "mahalanobis" if concept is not None else "laplace"
    if is_learned_folder(mechanism):
        path = Path(mechanism).resolve()
        kind = json.loads((path / CONFIG_FILE).read_text()).get("type")
        # CAPE's ε is an inference parameter (Laplace 2/ε); TextCrafter's noise is its radius
        mech = load_learned(path, epsilon=eps) if eps_given and kind == "cape" else load_learned(path)
        digest = hashlib.sha256((path / CONFIG_FILE).read_bytes()).hexdigest()[:16]
        return {"type": "learned", "path": str(path), "config_sha256": digest}, mech
    if isinstance(mechanism, os.PathLike):
        raise ArtefactError(f"mechanism: {str(mechanism)!r} is not a CAPE/TextCrafter folder "
                            "(config.json with type 'cape' or 'textcrafter')")
    if not isinstance(mechanism, str):
        raise InvalidTypeError("mechanism", f"one of {MECHANISMS}, a Mechanism or a learned-encoder folder", mechanism)
    name = mechanism.lower()
    if name not in MECHANISMS:
        raise InvalidParameterError("mechanism", f"one of {MECHANISMS}, a Mechanism or a learned-encoder folder",
                                    mechanism)
    rs = random_state
    if name == "laplace":
        return name, LaplaceMechanism(epsilon=eps, unit=unit, dim=dim, random_state=rs)
    if name == "purkayastha":
        return name, PurkayasthaMechanism(epsilon=eps, unit=unit, dim=dim, random_state=rs)
    if name == "gaussian":
        return name, GaussianMechanism(epsilon=eps / unit, delta=GAUSSIAN_DELTA, sensitivity=GAUSSIAN_SENSITIVITY,
                                       dim=dim, random_state=rs)
    if name == "none":
        return name, IdentityMechanism(dim=dim, random_state=rs)
    if concept is None:
        raise InvalidParameterError("mechanism", "a concept for mechanism='mahalanobis' (concept=...)",
                                    mechanism, note="or use mechanism='laplace' without a concept")
    return name, concept.mechanism(epsilon=eps, unit=unit, random_state=rs)
