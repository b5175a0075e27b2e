"""Common machinery of the noise mechanisms: validation, array kinds, randomness."""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .._validation import all_finite, as_float_matrix, check_int, check_positive_finite
from ..errors import InvalidParameterError, InvalidTypeError
from ..random import RandomSource, SecureRandom, resolve_random_state

__all__ = ["CHUNK", "Mechanism", "add_radial_noise", "unit_sphere"]


_TWO_PI32 = np.float32(2.0 * np.pi)
_ONE_BITS = np.uint32(0x3F800000)  # float32 1.0: OR-ed with 23 random mantissa bits gives [1, 2)
CHUNK = 128
"""Rows per pass of the fast sampler: its scratch (~1.2 MB at n = 768) stays in the outer caches
and is allocated once per call, instead of batch-sized temporaries that page-fault on every call;
128 rows rather than 64 halves the per-call overhead of the sampler's ~17 numpy calls per chunk."""


def _has_words(rng: Any) -> bool:
    """Whether ``rng`` has a bulk uniform-word path: the default :class:`SecureRandom` (AES-CTR)
    or a plain numpy ``Generator`` passed as ``rng=`` (its bit generator's raw output). Seeded
    mechanisms (``random_state=``) and keyed streams have none: they keep drawing exactly the
    numbers they drew before, through ``rng.standard_normal``."""
    return isinstance(rng, SecureRandom) or type(rng) is np.random.Generator


def _fill_words(rng: Any, out: np.ndarray) -> None:
    if isinstance(rng, SecureRandom):
        rng.fill_words(out)
    else:
        out[...] = rng.bit_generator.random_raw((out.size + 1) // 2).view("<u4")[: out.size]


class _Scratch:
    """One call's working arrays for :func:`_sphere_rows` (reused across its chunks)."""

    def __init__(self, rows: int, n: int) -> None:
        h = (n + 1) // 2
        self.words = np.empty(2 * rows * h, dtype=np.uint32)
        self.trig = np.empty((rows, h), dtype=np.float32)
        self.out = np.empty((rows, 2 * h), dtype=np.float32)
        self.ones = np.ones(h, dtype=np.float32)


def _sphere_rows(rng: Any, scratch: _Scratch, n: int, radius: np.ndarray) -> np.ndarray:
    """(len(radius), n) float32 rows ``radius[i] · u_i``, u_i uniform on S^{n-1}, by Box–Muller
    (Box & Muller, 1958), written into ``scratch`` (the returned array is a view of it).

    Each row takes h = ⌈n/2⌉ pairs of uniform words. 23 bits of a word OR-ed into the mantissa
    of 1.0 give f ∈ [1, 2) (no int-to-float conversion); a pair gives u = 2 − f ∈ (0, 1] and
    θ = 2πf, and √(−2 ln u)·(cos θ, sin θ) are two independent N(0, 1) draws: a row of them,
    normalised, is a uniform direction. For even n the squared norm of a row is Σ −2 ln u over
    its pairs (cos² + sin² = 1), so the normalisation and the radius fold into the pair radii:
    r′ = radius·√(ln u / Σ ln u). float32 throughout: the 2⁻²³ grid caps a pair's radius at
    √(46 ln 2) ≈ 5.6 (probability e^{−16} ≈ 1e-7 per pair of exceeding it under the exact law),
    far below what a float32 output resolves.
    """
    rows, h = len(radius), (n + 1) // 2
    words = scratch.words[: 2 * rows * h]
    _fill_words(rng, words)
    np.right_shift(words, np.uint32(9), out=words)
    np.bitwise_or(words, _ONE_BITS, out=words)
    f = words.view(np.float32)
    log_u, theta = f[: rows * h].reshape(rows, h), f[rows * h:].reshape(rows, h)
    np.subtract(np.float32(2.0), log_u, out=log_u)
    np.log(log_u, out=log_u)  # ln u ≤ 0
    theta *= _TWO_PI32
    r = np.asarray(radius, dtype=np.float64)
    if n % 2 == 0:
        sum_log = (log_u @ scratch.ones).astype(np.float64)  # −½‖row‖², < 0 unless every u = 1
        sum_log[sum_log == 0] = -1.0  # (probability 2^(−23h)): keeps the row finite
        log_u *= (r * r / sum_log).astype(np.float32)[:, None]
    else:
        log_u *= np.float32(-2.0)
    np.sqrt(log_u, out=log_u)
    out, trig = scratch.out[:rows], scratch.trig[:rows]
    np.cos(theta, out=trig)
    np.multiply(trig, log_u, out=out[:, :h])
    np.sin(theta, out=trig)
    np.multiply(trig, log_u, out=out[:, h:])
    if n % 2 == 0:
        return out
    g = out[:, :n]  # odd n: the last sine of each row is dropped, so normalise explicitly
    norms = np.sqrt(np.einsum("ij,ij->i", g, g, dtype=np.float64))
    norms[norms == 0] = 1.0
    g *= (r / norms).astype(np.float32)[:, None]
    return g


def add_radial_noise(X: np.ndarray, rng: RandomSource, radius: np.ndarray,
                     linear: Callable[[np.ndarray], np.ndarray] | None = None, *,
                     rowwise: bool = True, src: np.ndarray | None = None) -> None:
    """``X[i] += radius[i] · L(u_i)`` in place, u_i uniform on S^{n-1}, L linear (default identity).

    With ``src`` (an (m, n) float array, only read), ``X[i] = src[i] + radius[i] · L(u_i)``:
    ``src`` is copied into ``X`` chunk by chunk, so each chunk is converted and noised while it
    is in cache (one pass over memory instead of a copy, then an add).

    With a bulk-word source (the default) the directions come from Box–Muller draws with the
    radius folded in (same law: L is linear), :data:`CHUNK` rows at a time; ``L`` is applied per
    chunk when ``rowwise`` (cheap elementwise maps), else once to the whole batch (matrix products:
    one large product instead of many small multi-threaded ones). Otherwise (seeded, keyed) the
    directions come from :func:`unit_sphere`, then ``L``, then the radius, exactly as before, so
    seeded and keyed outputs are unchanged bit for bit.
    """
    m, n = X.shape
    if src is not None and (not _has_words(rng) or not (linear is None or rowwise)):
        np.copyto(X, src, casting="same_kind")
        src = None
    if not _has_words(rng):
        noise = unit_sphere(rng, m, n)
        if linear is not None:
            noise = linear(noise)
        noise *= np.asarray(radius, dtype=np.float32)[:, None]
        X += noise
        return
    per_chunk = linear is None or rowwise
    target = X if per_chunk else np.zeros_like(X)
    scratch = _Scratch(min(m, CHUNK), n)
    for i in range(0, m, CHUNK):
        noise = _sphere_rows(rng, scratch, n, radius[i:i + CHUNK])
        if src is not None:
            np.copyto(target[i:i + CHUNK], src[i:i + CHUNK], casting="same_kind")
        target[i:i + CHUNK] += noise if linear is None or not per_chunk else linear(noise)
    if not per_chunk:
        assert linear is not None
        X += linear(target)


_RNG_METHODS = ("random", "standard_normal", "gamma")


def unit_sphere(rng: RandomSource, m: int, n: int, dtype: Any = np.float32) -> np.ndarray:
    """``m`` directions uniform on the unit sphere S^{n-1} (normalised Gaussians).

    float32 by default: noise needs no more precision than the float32 output it goes into.

    With the default source (:class:`~private_vectors.random.SecureRandom`) or a plain numpy
    ``Generator`` the Gaussians are Box–Muller draws from uniform words (see
    :func:`add_radial_noise`); otherwise they come from ``rng.standard_normal``, so seeded
    mechanisms (``random_state=``) and keyed streams draw exactly the numbers they drew before.
    Both give i.i.d. N(0, 1) coordinates, hence uniform directions.
    """
    if np.dtype(dtype) == np.float32 and _has_words(rng):
        out = np.zeros((m, n), dtype=np.float32)
        add_radial_noise(out, rng, np.ones(m))
        return out
    g = rng.standard_normal((m, n), dtype=dtype)
    norms = np.sqrt(np.einsum("ij,ij->i", g, g))[:, None]
    norms[norms == 0] = 1.0  # probability zero; keeps the output finite
    g /= norms
    return g


def _is_torch(X: Any) -> bool:
    mod = type(X).__module__
    return mod.startswith("torch") and hasattr(X, "detach")


class Mechanism(abc.ABC):
    """A randomised map on embedding vectors with one verb, :meth:`perturb`.

    Subclasses implement :meth:`_perturb` on a validated float64 (m, n) matrix and
    :meth:`_describe`. Parameters are keyword-only and validated in ``__init__``.

    Args:
        dim: expected dimension n (optional; when given, inputs of another size are refused).
        random_state: None (secure, OS-seeded per call), or an int / numpy Generator
            (reproducible; for tests and benchmarks only).
    """

    name: ClassVar[str] = "mechanism"
    metric: ClassVar[str] = "l2"
    _additive: ClassVar[bool] = False
    """True when the output is the input plus finite noise, so a non-finite input always gives a
    non-finite output: the input's finiteness is then checked on the output, in the same pass."""

    def __init__(self, *, dim: int | None = None, random_state: Any = None) -> None:
        self.dim = None if dim is None else check_int(dim, "dim", minimum=1)
        self.random_state = random_state
        self._random = resolve_random_state(random_state)

    # -- the verb --------------------------------------------------------------------
    def perturb(self, X: Any, *, rng: RandomSource | None = None) -> Any:
        """Return a noisy copy of ``X``.

        Args:
            X: one vector (n,) or a batch (m, n); numpy array, list or torch tensor.
            rng: an explicit random source for this call (keyed noise); default: the
                mechanism's own (secure unless a seed was given).

        Returns:
            The same kind as ``X`` (numpy or torch, same shape), float32.
        """
        torch_in = _is_torch(X)
        device = None
        if torch_in:
            device = X.device
            X = X.detach().cpu().numpy()
        mat, single = as_float_matrix(X, "X", dim=self.dim, dtype=np.float32, check_finite=not self._additive,
                                      copy=not self._additive)
        self._check_input(mat)
        if rng is not None and not all(callable(getattr(rng, m, None)) for m in _RNG_METHODS):
            raise InvalidTypeError("rng", "None or a random source with random, standard_normal and gamma "
                                   "(a numpy Generator, or a keyed stream)", rng)
        source = rng if rng is not None else self._random.source()
        with np.errstate(over="ignore", invalid="ignore"):
            try:
                if self._additive:
                    out = np.empty(mat.shape, dtype=np.float32)
                    self._add_noise(mat, out, source)
                else:
                    out = self._perturb(mat, source)
            except (OverflowError, FloatingPointError, ZeroDivisionError) as exc:
                name, value = self._noise_parameter()
                raise InvalidParameterError(name, "a value whose noise is representable", value,
                                            note=f"computing the noise failed ({type(exc).__name__})") from None
            out32 = np.ascontiguousarray(out, dtype=np.float32)
        if not all_finite(out32):
            if self._additive:  # input + finite noise: a non-finite input shows here; name it first
                as_float_matrix(X, "X", dim=self.dim, dtype=np.float32)
            name, value = self._noise_parameter()
            raise InvalidParameterError(name, "a value whose noise fits in float32 (finite output)", value,
                                        note="the noise overflows: epsilon is too small (or unit/sigma too large)")
        if single:
            out32 = out32[0]
        if torch_in:
            import torch

            return torch.from_numpy(out32).to(device)
        return out32

    def transform_query(self, X: Any) -> np.ndarray:
        """Map a clean query embedding into the space the perturbed documents live in.

        Noise mechanisms leave queries as they are (the identity); learned encoders that
        change the vector space (CAPE's projection head) override this. Query-side maps are
        post-processing: they do not affect the documents' guarantee.
        """
        mat, single = as_float_matrix(X, "X", dim=self.dim)
        out = mat.astype(np.float32)
        return out[0] if single else out

    def output_dim(self, n: int) -> int:
        """Dimension of perturbed vectors for inputs of dimension ``n`` (same, unless overridden)."""
        return n

    def _noise_parameter(self) -> tuple[str, Any]:
        """The parameter to name when the noise is not representable (ε by default)."""
        eps = getattr(self, "epsilon", None)
        if eps is not None:
            return "epsilon", eps
        return "sigma", getattr(self, "sigma", None)

    # -- subclass hooks --------------------------------------------------------------
    def _check_input(self, X: np.ndarray) -> None:  # noqa: B027 - optional hook
        """Extra input checks (e.g. dimension of Σ); none by default."""

    def _add_noise(self, src: np.ndarray, out: np.ndarray, rng: RandomSource) -> None:
        """``out = src + noise`` for an additive mechanism (``_additive``): ``src`` a validated (m, n)
        float32 or float64 matrix, only read; ``out`` a float32 matrix of its shape."""
        np.copyto(out, src, casting="same_kind")
        self._perturb(out, rng)

    @abc.abstractmethod
    def _perturb(self, X: np.ndarray, rng: RandomSource) -> np.ndarray:
        """Noisy copy of a validated float32 (m, n) matrix (a fresh copy the method may modify)."""

    @abc.abstractmethod
    def _describe(self, n: int | None) -> dict[str, Any]:
        """Mechanism-specific part of :meth:`describe`."""

    @abc.abstractmethod
    def get_params(self) -> dict[str, Any]:
        """JSON-safe constructor parameters (no arrays, no secrets)."""

    # -- reporting -------------------------------------------------------------------
    def describe(self, dim: int | None = None) -> dict[str, Any]:
        """A JSON-safe summary: name, ε, metric, distance unit, expected noise norm, radius.

        Args:
            dim: dimension to evaluate dimension-dependent figures at (default: ``self.dim``).
        """
        n = dim if dim is not None else self.dim
        info: dict[str, Any] = {"name": self.name, "metric": self.metric, "dim": n}
        info.update(self._describe(n))
        info["seeded"] = self._random.seeded
        if self._random.seeded:
            info["randomness"] = "seeded: for testing only"
        else:
            info["randomness"] = "secure: OS entropy (secrets) per call"
        return _json_safe(info)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else str(f)
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


class EpsilonPerUnit(Mechanism):
    """A mechanism set by ε per ``unit`` of distance and nothing else (Laplace, Purkayastha):
    both finite reals > 0."""

    def __init__(self, *, epsilon: float, unit: float = 1.0, dim: int | None = None, random_state: Any = None) -> None:
        super().__init__(dim=dim, random_state=random_state)
        self.epsilon = check_positive_finite(epsilon, "epsilon")
        self.unit = check_positive_finite(unit, "unit")

    def get_params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "unit": self.unit, "dim": self.dim}
