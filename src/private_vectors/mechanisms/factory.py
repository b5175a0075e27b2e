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

from ..errors import ArtefactError, Described, InvalidParameterError, InvalidTypeError
from .base import Mechanism
from .cape import CapeEncoder
from .gaussian import GaussianMechanism
from .identity import IdentityMechanism
from .laplace import LaplaceMechanism
from .learned import _PACKAGED_ROOT, CONFIG_FILE, LearnedMechanism, packaged_artefact, read_artefact
from .purkayastha import PurkayasthaMechanism
from .textcrafter import TextCrafter

__all__ = [
    "GAUSSIAN_DELTA",
    "GAUSSIAN_SENSITIVITY",
    "LEARNED_TYPES",
    "MECHANISMS",
    "build_mechanism",
    "carries_own_parameters",
    "is_learned_folder",
    "load_learned",
    "packaged_learned",
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


def packaged_learned(name: str, model_id: str | None) -> Path:
    """The shipped CAPE/TextCrafter artefact for the encoder ``model_id``.

    Raises:
        InvalidParameterError: none ships for that encoder (the message names those it ships for).
    """
    try:
        return packaged_artefact(name, model_id)
    except ArtefactError:
        shipped = sorted({p.parent.name for p in _packaged_folders(name)})
        raise InvalidParameterError(
            "mechanism", f"{name!r} with an encoder it ships for ({', '.join(shipped) or 'none'})",
            Described(f"{name!r} with encoder {model_id!r}"),
            note=f"train one ({LEARNED_TYPES[name].__name__}(...).fit(...).save(folder)) and pass "
                 "mechanism=<folder>") from None


def _packaged_folders(name: str) -> list[Path]:
    return [p for p in _PACKAGED_ROOT.glob(f"*/{name}") if (p / CONFIG_FILE).is_file()]


def carries_own_parameters(mechanism: Any) -> bool:
    """Whether ``mechanism`` brings its own ε and noise shape: a :class:`Mechanism` instance, a
    CAPE/TextCrafter folder or the name of a packaged one (``"cape"``, ``"textcrafter"``)."""
    if isinstance(mechanism, (Mechanism, os.PathLike)) or is_learned_folder(mechanism):
        return True
    return isinstance(mechanism, str) and (mechanism.lower() in LEARNED_TYPES or os.sep in mechanism
                                           or "/" in mechanism)


def build_mechanism(mechanism: Any, *, eps: float | None, eps_given: bool, unit: float | None, dim: int,
                    concept: Any, random_state: Any, model_id: str | None = None) -> tuple[Any, Mechanism]:
    """(JSON-safe reference, mechanism instance) for ``mechanism``.

    Args:
        mechanism: one of :data:`MECHANISMS` (resolved: no default here), a :class:`Mechanism`
            instance, or a CAPE/TextCrafter folder or packaged name.
        eps: ε per ``unit`` of distance (a named mechanism needs it).
        eps_given: whether the user gave ε (a CAPE folder then runs at ``eps``; otherwise a
            learned folder keeps its own ε/radius).
        unit: distance unit of ε (a named mechanism needs it).
        dim: input dimension.
        concept: a fitted concept (``concept.mechanism(epsilon=, unit=, random_state=)``) or None.
        random_state: a resolved random source shared by the mechanisms built here.
        model_id: the encoder's model id: ``"cape"`` / ``"textcrafter"`` load the artefact
            shipped for it (``data/learned/<model_id>/<name>/``).
    """
    if isinstance(mechanism, Mechanism):
        return {"type": "instance", "class": type(mechanism).__name__, "params": mechanism.get_params()}, mechanism
    if isinstance(mechanism, str) and mechanism.lower() in LEARNED_TYPES and not Path(mechanism).exists():
        name = mechanism.lower()
        path = packaged_learned(name, model_id)
        mech = load_learned(path, epsilon=eps) if eps_given and name == "cape" else load_learned(path)
        digest = hashlib.sha256((path / CONFIG_FILE).read_bytes()).hexdigest()[:16]
        return {"type": "learned", "name": name, "model": model_id, "config_sha256": digest}, mech
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
        raise InvalidParameterError("mechanism", f"one of {(*MECHANISMS, *LEARNED_TYPES)}, a Mechanism or a "
                                    "learned-encoder folder", mechanism)
    rs = random_state
    assert eps is not None and unit is not None, "a named mechanism is built from resolved options"
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
        raise InvalidParameterError("mechanism", "a noise concept for mechanism='mahalanobis' (noise_concept=...)",
                                    mechanism, note="or use mechanism='laplace' without a noise concept")
    return name, concept.mechanism(epsilon=eps, unit=unit, random_state=rs)
