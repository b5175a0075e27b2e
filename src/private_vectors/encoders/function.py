"""Adapter for a plain function ``texts -> array``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._validation import as_float_matrix, check_texts
from ..errors import InvalidParameterError, InvalidTypeError
from .base import l2_normalize

__all__ = ["CallableEncoder"]


class CallableEncoder:
    """Wrap ``fn(list[str]) -> array (m, n)`` as an encoder.

    Args:
        fn: the embedding function.
        dim: its output dimension (probed with one call when omitted).
        model_id: a stable id for configs and fingerprints (default: the function's qualified name).
        normalize: unit-normalise outputs (default True).
    """

    def __init__(self, fn: Callable[[list[str]], Any], *, dim: int | None = None,
                 model_id: str | None = None, normalize: bool = True) -> None:
        if not callable(fn):
            raise InvalidTypeError("fn", "a callable texts -> array", fn)
        self._fn = fn
        self.normalize = bool(normalize)
        self.model_id = model_id or f"callable:{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
        self.dim = int(dim) if dim is not None else int(self._call(["dimension probe"]).shape[1])

    def __repr__(self) -> str:
        return f"CallableEncoder({self.model_id!r}, dim={self.dim})"

    def _call(self, items: list[str]) -> np.ndarray:
        mat, _ = as_float_matrix(self._fn(items), "fn(texts)")
        if mat.shape[0] != len(items):
            raise InvalidParameterError("fn(texts)", f"{len(items)} rows", mat)
        return mat

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        mat = self._call(items)
        if mat.shape[1] != self.dim:
            raise InvalidParameterError("fn(texts)", f"vectors of dimension {self.dim}", mat)
        zero = np.flatnonzero(~np.any(mat != 0, axis=1))
        if zero.size:  # a zero vector carries no text: storing its noise would silently lose the document
            raise InvalidParameterError("fn(texts)", "non-zero vectors", mat,
                                        note=f"rows {zero[:5].tolist()} are all zeros")
        if self.normalize:
            mat = l2_normalize(mat)
        return mat.astype(np.float32)

    def get_config(self) -> dict[str, Any]:
        return {"type": "callable", "model": self.model_id, "dim": self.dim, "normalize": self.normalize}
