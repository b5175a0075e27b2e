"""Encoders: texts → float32 (m, n). One protocol, three adapters, one loader.

(CAPE and TextCrafter perturb vectors: they are in :mod:`private_vectors.mechanisms`.)
"""

from __future__ import annotations

import threading
from typing import Any

from ..errors import InvalidParameterError, InvalidTypeError
from .base import CANARY_SENTENCES, Encoder, fingerprint, fingerprints_match, l2_normalize
from .fake import FakeEncoder
from .function import CallableEncoder
from .sentence_transformers import DEFAULT_MODEL, SentenceTransformerEncoder, default_model_path

__all__ = [
    "CANARY_SENTENCES",
    "DEFAULT_MODEL",
    "CallableEncoder",
    "Encoder",
    "FakeEncoder",
    "SentenceTransformerEncoder",
    "default_model_path",
    "fingerprint",
    "fingerprints_match",
    "l2_normalize",
    "load_encoder",
]

_CACHE: dict[tuple[str, bool], Encoder] = {}
# Process-wide: a model is loaded once and shared by every embedding and rebuild
# (tests/test_random_and_encoders.py asserts load_encoder returns the same object).
_CACHE_LOCK = threading.Lock()


def load_encoder(model: Any = None, *, normalize: bool = True) -> Encoder:
    """Resolve ``model`` to an encoder.

    Args:
        model: None (the packaged all-MiniLM-L6-v2), a sentence-transformers model name or
            local path, ``"fake"``/``"fake:<dim>"`` (the test encoder), an encoder object,
            a ``SentenceTransformer`` instance, a plain callable, or an encoder config dict.
        normalize: unit-normalise outputs (ignored for ready encoder objects).

    Sentence-transformers models are loaded once per process and shared.
    """
    if model is None:
        model = DEFAULT_MODEL
    if isinstance(model, dict):
        kind = model.get("type")
        if kind == "fake":
            return FakeEncoder(dim=int(model.get("dim", 64)), normalize=bool(model.get("normalize", True)))
        if kind == "sentence-transformers":
            return load_encoder(model.get("model"), normalize=bool(model.get("normalize", True)))
        raise InvalidParameterError("model", "an encoder config of type 'fake' or 'sentence-transformers'", model,
                                    note="callable encoders cannot be rebuilt from a config; pass the callable")
    if isinstance(model, str):
        if model == "fake" or model.startswith("fake:"):
            dim = int(model.split(":", 1)[1]) if ":" in model else 64
            return FakeEncoder(dim=dim, normalize=normalize)
        key = (model, normalize)
        with _CACHE_LOCK:
            if key not in _CACHE:
                _CACHE[key] = SentenceTransformerEncoder(model, normalize=normalize)
            return _CACHE[key]
    if isinstance(model, Encoder):
        return model
    if type(model).__name__ == "SentenceTransformer":
        card = getattr(model, "model_card_data", None)
        name = getattr(card, "base_model", None) or "sentence-transformer"
        return SentenceTransformerEncoder(name, model_object=model, normalize=normalize)
    if callable(model):
        return CallableEncoder(model, normalize=normalize)
    raise InvalidTypeError("model", "None, a model name or path, an Encoder, a SentenceTransformer or a callable", model)
