"""Common machinery of the noise mechanisms: validation, array kinds, randomness."""

from __future__ import annotations

import abc
import math
from typing import Any, ClassVar

import numpy as np

from .._validation import as_float_matrix, check_int, check_positive_finite
from ..errors import InvalidParameterError, InvalidTypeError
from ..random import RandomSource, resolve_random_state

__all__ = ["Mechanism", "gaussians_box_muller", "unit_sphere"]


_TWO_PI32 = np.float32(2.0 * np.pi)


def gaussians_box_muller(gen: np.random.Generator, m: int, n: int) -> np.ndarray:
    """(m, n) float32 standard normals by the Box–Muller transform (Box & Muller, 1958).

    From pairs of float32 uniforms u, v: √(−2 ln(1 − u))·(cos 2πv, sin 2πv) are two
    independent N(0, 1) draws. With numpy's vectorised float32 log/sqrt/sin/cos this is
    several times faster than ``Generator.standard_normal(dtype=float32)`` (ziggurat) on this
    project's 2-core machine (benchmarks/results/mechanisms.md). The 2⁻²⁴ grid of float32
    uniforms caps a pair's radius at √(48 ln 2) ≈ 5.8 (probability e^{−16.6} ≈ 6e-8 per pair
    of exceeding it under the exact law) — far below what a float32 output resolves.
    """
    total = m * n
    half = (total + 1) // 2
    radius = gen.random(half, dtype=np.float32)
    np.subtract(np.float32(1.0), radius, out=radius)  # in (0, 1]: log is finite
    np.log(radius, out=radius)
    radius *= np.float32(-2.0)
    np.sqrt(radius, out=radius)
    angle = gen.random(half, dtype=np.float32)
    angle *= _TWO_PI32
    out = np.empty(2 * half, dtype=np.float32)
    np.cos(angle, out=out[:half])
    np.sin(angle, out=out[half:])
    out[:half] *= radius
    out[half:] *= radius
    return out[:total].reshape(m, n)

_RNG_METHODS = ("random", "standard_normal", "gamma")


def unit_sphere(rng: RandomSource, m: int, n: int, dtype: Any = np.float32) -> np.ndarray:
    """``m`` directions uniform on the unit sphere S^{n-1} (normalised Gaussians).

    float32 by default: noise needs no more precision than the float32 output it goes into.

    The Gaussians come from :func:`gaussians_box_muller` when ``rng`` is a plain numpy
    ``Generator`` — the fresh OS-seeded generator every unseeded call gets, the default — and
    from ``rng.standard_normal`` otherwise, so seeded mechanisms (``random_state=``) and keyed
    streams draw exactly the numbers they drew before. Both give i.i.d. N(0, 1) coordinates,
    hence uniform directions.
    """
    if type(rng) is np.random.Generator and np.dtype(dtype) == np.float32:
        g = gaussians_box_muller(rng, m, n)
    else:
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
        mat, single = as_float_matrix(X, "X", dim=self.dim, dtype=np.float32)
        self._check_input(mat)
        if rng is not None and not all(callable(getattr(rng, m, None)) for m in _RNG_METHODS):
            raise InvalidTypeError("rng", "None or a random source with random, standard_normal and gamma "
                                   "(a numpy Generator, or a keyed stream)", rng)
        with np.errstate(over="ignore", invalid="ignore"):
            try:
                out = self._perturb(mat, rng if rng is not None else self._random.source())
            except (OverflowError, FloatingPointError, ZeroDivisionError) as exc:
                name, value = self._noise_parameter()
                raise InvalidParameterError(name, "a value whose noise is representable", value,
                                            note=f"computing the noise failed ({type(exc).__name__})") from None
            out32 = np.ascontiguousarray(out, dtype=np.float32)
        if not np.all(np.isfinite(out32)):
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


def check_epsilon(epsilon: Any) -> float:
    """ε must be a finite real > 0."""
    return check_positive_finite(epsilon, "epsilon")


def check_unit(unit: Any) -> float:
    """The distance unit ε is expressed in: a finite real > 0."""
    return check_positive_finite(unit, "unit")
