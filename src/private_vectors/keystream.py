"""Batched keyed noise (derivation v2): one keyed stream per text, drawn for a whole batch at once.

Each text gets its own stream: SHAKE-128 keyed by prefix (the sponge construction KMAC is built
on, NIST SP 800-185) over ``noise subkey ‖ context ‖ text ‖ draw index``. A mechanism's
``perturb`` runs **once** on the whole batch with a :class:`RowKeyedSource`, whose draws hand
row i only values from row i's stream, in the order the mechanism asks for them. So the noise
of a text depends on (key, context, text) only — never on which batch it came in or on its
position — and re-ingesting it reproduces its vector.

Distributions (exact up to the stated discretisation):

* uniforms: 53-bit, from two 32-bit words (numpy's construction), on [0, 1);
* normals: Box–Muller on 32-bit uniforms, u₁ ∈ (0, 1) (tails cut at 6.7σ, probability 3e-11),
  the radius in float64, the angle's cos/sin in float32 (the stored vectors are float32);
* Gamma(k, θ) (the radius of Laplace/Mahalanobis): inverse CDF of one open 53-bit uniform,
  ``θ · scipy.special.gammaincinv(k, u)`` (any shape k > 0).

A mechanism that draws anything but row-major batches (leading dimension = the batch size)
raises :class:`NotRowwiseError` inside the batched call; :func:`keyed_perturb` then runs it one
text at a time with the same per-text streams, which gives the same vectors for texts whose
draws were row-wise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["DOMAIN", "NotRowwiseError", "RowKeyedSource", "keyed_perturb"]

DOMAIN = b"private_vectors/keyed-noise/v2"
_TWO32 = float(2**32)
_LOG_TWO32 = 32.0 * float(np.log(2.0))
CHUNK = 64  # texts per mechanism call: keeps the working set in cache


class NotRowwiseError(RuntimeError):
    """A draw whose leading dimension is not the batch size (internal: triggers the per-row path)."""


def _prefix(*parts: bytes) -> bytes:
    return b"".join(len(p).to_bytes(8, "little") + p for p in parts)


class RowKeyedSource:
    """A :class:`~private_vectors.random.RandomSource` for a batch of texts, one keyed stream per row.

    Args:
        key: the noise subkey (32 secret bytes).
        context: the public context (encoder identity ‖ mechanism config), canonical bytes.
        texts: one byte string per row (the texts, UTF-8).
        label: stream family, e.g. ``b"doc"`` or ``b"query"``.
    """

    def __init__(self, key: bytes, context: bytes, texts: Sequence[bytes], label: bytes = b"doc") -> None:
        base = hashlib.shake_128(_prefix(DOMAIN, key, label, context))
        self._rows = []
        for t in texts:
            h = base.copy()
            h.update(_prefix(t))
            self._rows.append(h)
        self._m = len(self._rows)
        self._draw = 0

    def __repr__(self) -> str:
        return f"RowKeyedSource(<secret>, rows={self._m})"

    def __reduce__(self) -> Any:
        raise TypeError("RowKeyedSource holds key material and is never pickled")

    # -- the stream --------------------------------------------------------------------------
    def _per_row(self, size: int | tuple[int, ...]) -> tuple[tuple[int, ...], int]:
        shape = (int(size),) if isinstance(size, (int, np.integer)) else tuple(int(s) for s in size)
        if self._m == 1:
            return shape, int(np.prod(shape, dtype=np.int64))
        if not shape or shape[0] != self._m:
            raise NotRowwiseError(f"draw of shape {shape} for a batch of {self._m} rows")
        return shape, int(np.prod(shape[1:], dtype=np.int64))

    def _words(self, count: int) -> np.ndarray:
        """(m, count) uint32 words: row i from its own stream, draw-indexed."""
        tag = self._draw.to_bytes(8, "little")
        self._draw += 1
        nbytes = 4 * count
        chunks = []
        for h in self._rows:
            c = h.copy()
            c.update(tag)
            chunks.append(c.digest(nbytes))
        return np.frombuffer(b"".join(chunks), dtype="<u4").reshape(self._m, count)

    # -- RandomSource --------------------------------------------------------------------------
    def random(self, size: int | tuple[int, ...]) -> np.ndarray:
        """53-bit uniforms on [0, 1)."""
        shape, k = self._per_row(size)
        w = self._words(2 * k).astype(np.uint64)
        a, b = w[:, 0::2] >> np.uint64(5), w[:, 1::2] >> np.uint64(6)
        return ((a * np.uint64(67108864) + b).astype(np.float64) * (1.0 / 9007199254740992.0)).reshape(shape)

    def _open_uniform(self, size: int | tuple[int, ...]) -> np.ndarray:
        """53-bit uniforms on (0, 1)."""
        shape, k = self._per_row(size)
        w = self._words(2 * k).astype(np.uint64)
        a, b = w[:, 0::2] >> np.uint64(5), w[:, 1::2] >> np.uint64(6)
        return (((a * np.uint64(67108864) + b).astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)).reshape(shape)

    def standard_normal(self, size: int | tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
        """Standard normals by Box–Muller on 32-bit uniforms (pairs within a row)."""
        shape, k = self._per_row(size)
        half = (k + 1) // 2
        w = self._words(2 * half)
        # radius sqrt(-2 log u1), u1 = (w + 0.5) / 2^32, in float64 (exact tails), in place
        radius = w[:, :half].astype(np.float64)
        radius += 0.5
        np.log(radius, out=radius)
        np.subtract(_LOG_TWO32, radius, out=radius)
        radius *= 2.0
        np.sqrt(radius, out=radius)
        angle = w[:, half:].astype(np.float32)  # float32 trig: 30x cheaper, output is float32
        angle *= np.float32(2.0 * np.pi / _TWO32)
        z = np.empty((self._m, 2 * half), dtype=np.float64 if np.dtype(dtype) == np.float64 else np.float32)
        np.multiply(radius, np.cos(angle), out=z[:, :half], casting="unsafe")
        np.multiply(radius, np.sin(angle), out=z[:, half:], casting="unsafe")
        if k != 2 * half:
            z = np.ascontiguousarray(z[:, :k])
        return z.reshape(shape).astype(dtype, copy=False)

    def gamma(self, shape: float, scale: float, size: int) -> np.ndarray:
        """Gamma(shape, scale) by inverse CDF of one open uniform per variate."""
        if not (shape > 0 and scale > 0):
            raise ValueError("gamma: shape and scale must be > 0")
        # imported here, not at module level: scipy.special costs ~0.2 s at start-up
        from scipy.special import gammaincinv

        u = self._open_uniform(size)
        return gammaincinv(float(shape), u) * float(scale)


def keyed_perturb(mechanism: Any, X: np.ndarray, key: bytes, context: bytes, texts: Sequence[str],
                  label: bytes = b"doc") -> np.ndarray:
    """``mechanism.perturb`` with per-text keyed streams, one batched call when the mechanism
    draws row-wise (all built-in noise mechanisms do), else one call per text."""
    encoded = [t.encode("utf-8") for t in texts]
    if len(encoded) == 0:
        return np.asarray(mechanism.perturb(X, rng=RowKeyedSource(key, context, [], label)))
    if len(encoded) > CHUNK:  # chunks change nothing: each text's noise comes from its own stream
        return np.vstack([keyed_perturb(mechanism, X[i:i + CHUNK], key, context, texts[i:i + CHUNK], label)
                          for i in range(0, len(encoded), CHUNK)])
    try:
        return np.atleast_2d(mechanism.perturb(X, rng=RowKeyedSource(key, context, encoded, label)))
    except NotRowwiseError:
        pass
    return np.vstack([np.atleast_2d(mechanism.perturb(X[i:i + 1], rng=RowKeyedSource(key, context, [t], label)))
                      for i, t in enumerate(encoded)])
