"""The encoder protocol: texts → float32 array (m, n), plus an identity fingerprint."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import weakref
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["CANARY_SENTENCES", "Encoder", "fingerprint", "fingerprints_match", "l2_normalize"]

CANARY_SENTENCES = (
    "The quick brown fox jumps over the lazy dog.",
    "Maria Lopez moved to 42 Elm Street, Springfield, on Monday.",
    "Patients with chronic cough were treated with inhaled steroids.",
)
"""Fixed sentences whose embeddings identify an encoder (artefacts record them)."""


@runtime_checkable
class Encoder(Protocol):
    """What the package needs from an encoder.

    Attributes:
        model_id: a stable, human-readable id (model name, path basename, or callable name).
        dim: embedding dimension n.
        normalize: whether :meth:`encode` returns unit-norm rows.
    """

    model_id: str
    dim: int
    normalize: bool

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; returns float32 (len(texts), dim)."""
        ...

    def get_config(self) -> dict[str, Any]:
        """JSON-safe description from which :func:`private_vectors.encoders.load_encoder` rebuilds it."""
        ...


def l2_normalize(X: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return X / norms


_FINGERPRINTS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
# Per encoder object, held weakly: loading an artefact checks the fingerprint more than once
# (tests/test_process_state.py::test_an_encoder_s_fingerprint_is_computed_once).


def fingerprint(encoder: Encoder) -> dict[str, Any]:
    """The encoder fingerprint recorded in artefacts and configs.

    Computed once per encoder object (loading a concept checks it more than once); a copy is
    returned each time.

    Returns:
        ``{"model_id", "dim", "normalize", "canary_sha256", "canary": [[...], ...]}``: the
        canary embeddings themselves are kept (rounded to 5 decimals) so two fingerprints
        can be compared with a tolerance across machines; the hash is for display.
    """
    try:
        cached = _FINGERPRINTS.get(encoder)
    except TypeError:  # not weak-referenceable or not hashable: no cache
        cached = None
    if cached is None:
        cached = _compute_fingerprint(encoder)
        with contextlib.suppress(TypeError):
            _FINGERPRINTS[encoder] = cached
    return copy.deepcopy(cached)


def _compute_fingerprint(encoder: Encoder) -> dict[str, Any]:
    emb = np.asarray(encoder.encode(list(CANARY_SENTENCES)), dtype=np.float64)
    rounded = np.round(emb, 5)
    digest = hashlib.sha256(np.round(emb, 2).astype("<f8").tobytes()).hexdigest()[:16]
    return {
        "model_id": encoder.model_id,
        "dim": int(encoder.dim),
        "normalize": bool(encoder.normalize),
        "canary_sha256": digest,
        "canary": rounded.tolist(),
    }


def fingerprints_match(a: dict[str, Any], b: dict[str, Any], *, atol: float = 2e-3) -> tuple[bool, str]:
    """Whether two fingerprints describe the same encoder; with the reason when not.

    Dimension must agree exactly; canary embeddings within ``atol`` (machines differ in
    the last float bits). Model ids may differ (the same model under another path).
    """
    if int(a.get("dim", -1)) != int(b.get("dim", -2)):
        return False, f"dimension {a.get('dim')} vs {b.get('dim')}"
    ca, cb = a.get("canary"), b.get("canary")
    if ca is None or cb is None:
        same = a.get("model_id") == b.get("model_id")
        return same, "" if same else f"model {a.get('model_id')!r} vs {b.get('model_id')!r}"
    diff = float(np.max(np.abs(np.asarray(ca) - np.asarray(cb))))
    if diff > atol:
        return False, (f"model {a.get('model_id')!r} vs {b.get('model_id')!r}: canary embeddings differ "
                       f"by up to {diff:.3g}")
    return True, ""
