"""Random sources for the mechanisms.

Three ways to get noise, all behind one small interface (:class:`RandomSource`):

* ``random_state=None`` (real use): every call gets a fresh :class:`SecureRandom`: an
  AES-256-CTR keystream under a key drawn from :mod:`secrets` (the OS's secure source) for
  the bulk uniform words the noise directions are made of, and a numpy ``Generator`` seeded
  from the same OS source for everything else; the global RNG is never used.
* ``random_state=int | Generator`` (tests and benchmarks only): one generator,
  guarded by a lock so concurrent callers never share its state unsafely.
* :class:`KeyedStream` (keyed noise): a deterministic stream from SHAKE-256 keyed
  with ``HMAC-SHA256(key, context)``, so one text always receives the same noise.
"""

from __future__ import annotations

import hashlib
import hmac
import numbers
import secrets
import threading
from typing import Any, Protocol

import numpy as np

from .errors import Described, InvalidTypeError

__all__ = ["KeyedStream", "RandomSource", "RandomState", "SecureRandom", "keyed_stream", "resolve_random_state"]


class RandomSource(Protocol):
    """What a mechanism needs from randomness."""

    def random(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Uniforms on [0, 1)."""
        ...

    def standard_normal(self, size: int | tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
        """Standard normal variates (float64 or float32)."""
        ...

    def gamma(self, shape: float, scale: float, size: int) -> np.ndarray:
        """Gamma(shape, scale) variates."""
        ...


class KeyedStream:
    """A deterministic CSPRNG stream: SHAKE-256 over ``seed ‖ block-counter``.

    Uniforms take 53 bits of each 64-bit word; normals use Box–Muller; Gamma with an
    integer shape k is a sum of k unit exponentials (exact), which covers the
    Gamma(n, ·) radius of the Laplace and Mahalanobis mechanisms.

    Args:
        seed: 32 secret bytes, e.g. ``HMAC-SHA256(key, context)``.
    """

    _BLOCK = 1 << 14  # bytes per SHAKE call

    def __init__(self, seed: bytes) -> None:
        self._seed = bytes(seed)
        self._counter = 0
        self._buffer = b""

    def __repr__(self) -> str:  # never show the seed
        return "KeyedStream(<secret>)"

    def _bytes(self, count: int) -> bytes:
        while len(self._buffer) < count:
            block = hashlib.shake_256(self._seed + self._counter.to_bytes(8, "little")).digest(self._BLOCK)
            self._counter += 1
            self._buffer += block
        out, self._buffer = self._buffer[:count], self._buffer[count:]
        return out

    def random(self, size: int | tuple[int, ...]) -> np.ndarray:
        shape = (size,) if isinstance(size, int) else tuple(size)
        count = int(np.prod(shape, dtype=np.int64))
        words = np.frombuffer(self._bytes(8 * count), dtype="<u8")
        return ((words >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))).reshape(shape)

    def _open_uniform(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Uniforms on (0, 1], safe inside log."""
        return 1.0 - self.random(size)

    def standard_normal(self, size: int | tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
        shape = (size,) if isinstance(size, int) else tuple(size)
        count = int(np.prod(shape, dtype=np.int64))
        half = (count + 1) // 2
        u1, u2 = self._open_uniform(half), self.random(half)
        radius = np.sqrt(-2.0 * np.log(u1))
        z = np.concatenate([radius * np.cos(2 * np.pi * u2), radius * np.sin(2 * np.pi * u2)])
        return z[:count].reshape(shape).astype(dtype, copy=False)

    def gamma(self, shape: float, scale: float, size: int) -> np.ndarray:
        k = round(shape)
        if k != shape or k < 1:
            raise ValueError("KeyedStream.gamma supports integer shapes >= 1 only")
        logs = np.log(self._open_uniform((size, k)))
        return -logs.sum(axis=1) * scale


class SecureRandom:
    """The unseeded source of one call: a CSPRNG for bulk words, numpy for the rest.

    :meth:`words` are AES-256 in counter mode under a fresh 256-bit key from the OS (the
    construction of NIST SP 800-90A's CTR_DRBG output function, via ``cryptography``); with
    AES-NI it yields uniform 32-bit words several times faster than numpy's PCG64 float draws,
    and unlike PCG64 its output does not reveal its state. :meth:`random`, :meth:`standard_normal`
    and :meth:`gamma` go to a numpy ``Generator`` seeded with 128 bits from :mod:`secrets`.

    Args:
        key: 32 bytes, **tests only** (a reproducible stream); default: fresh OS randomness.
    """

    def __init__(self, key: bytes | None = None) -> None:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        aes_key = secrets.token_bytes(32) if key is None else bytes(key)
        if len(aes_key) != 32:
            raise InvalidTypeError("key", "32 bytes", Described(f"{len(aes_key)} bytes"))
        self._cipher = Cipher(algorithms.AES(aes_key), modes.CTR(bytes(16))).encryptor()
        self._seed = secrets.randbits(128) if key is None else int.from_bytes(self.words(4).tobytes(), "little")
        self._gen: np.random.Generator | None = None

    def __repr__(self) -> str:  # never show the key
        return "SecureRandom(<secret>)"

    def __reduce__(self) -> Any:
        raise TypeError("SecureRandom holds key material and is never pickled")

    def words(self, count: int) -> np.ndarray:
        """``count`` independent uniform uint32 words (the AES-CTR keystream)."""
        out = np.zeros(int(count), dtype="<u4")
        self.fill_words(out)
        return out

    def fill_words(self, out: np.ndarray) -> None:
        """Overwrite a C-contiguous uint32 array with the next ``out.size`` keystream words, in place."""
        out.fill(0)
        view = memoryview(out.data).cast("B")
        self._cipher.update_into(view, view)

    def _generator(self) -> np.random.Generator:
        if self._gen is None:
            self._gen = np.random.default_rng(self._seed)
        return self._gen

    def random(self, size: int | tuple[int, ...]) -> np.ndarray:
        return self._generator().random(size)

    def standard_normal(self, size: int | tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
        return self._generator().standard_normal(size, dtype=dtype)

    def gamma(self, shape: float, scale: float, size: int) -> np.ndarray:
        return self._generator().gamma(shape, scale, size)


class _LockedGenerator:
    """A seeded numpy Generator shared by threads under a lock."""

    def __init__(self, generator: np.random.Generator) -> None:
        self._gen = generator
        self._lock = threading.Lock()

    def random(self, size: int | tuple[int, ...]) -> np.ndarray:
        with self._lock:
            return self._gen.random(size)

    def standard_normal(self, size: int | tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
        with self._lock:
            return self._gen.standard_normal(size, dtype=dtype)

    def gamma(self, shape: float, scale: float, size: int) -> np.ndarray:
        with self._lock:
            return self._gen.gamma(shape, scale, size)


RandomState = int | np.random.Generator | None


class ResolvedRandomState:
    """Resolved ``random_state``: hands out a :class:`RandomSource` per call."""

    def __init__(self, random_state: Any) -> None:
        if random_state is None:
            self.seeded = False
            self._shared: _LockedGenerator | None = None
        elif isinstance(random_state, np.random.Generator):
            self.seeded = True
            self._shared = _LockedGenerator(random_state)
        elif (isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool)
              and random_state >= 0):
            self.seeded = True
            self._shared = _LockedGenerator(np.random.default_rng(int(random_state)))
        else:
            raise InvalidTypeError("random_state", "None, a non-negative int or a numpy Generator", random_state)

    def source(self) -> RandomSource:
        """A random source for one call: a fresh :class:`SecureRandom` unless a seed was given."""
        if self._shared is not None:
            return self._shared
        return SecureRandom()


def resolve_random_state(random_state: Any) -> ResolvedRandomState:
    """Validate ``random_state`` (None, int >= 0 or numpy Generator)."""
    if isinstance(random_state, ResolvedRandomState):
        return random_state
    return ResolvedRandomState(random_state)


def keyed_stream(key: bytes, *parts: bytes) -> KeyedStream:
    """The keyed stream for one context: SHAKE-256 seeded with HMAC-SHA256(key, len-prefixed parts)."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        mac.update(len(part).to_bytes(8, "little"))
        mac.update(part)
    return KeyedStream(mac.digest())
