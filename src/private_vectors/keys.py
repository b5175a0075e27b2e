"""Key material: a redacted holder, one stretch with scrypt, HKDF subkeys, versioned derivations.

A secret key makes document noise a function of (key, context, text), so re-ingesting a text
stores the identical vector and an attacker gains nothing from copies. This module is the one
place key bytes are handled:

* :class:`SecretKey` holds the raw secret. Its ``repr``/``str`` are redacted, it refuses to be
  pickled or copied into a config, and errors about a bad key never echo it.
* Derivation ``"v2"`` (new collections): the key is stretched **once** with scrypt
  (RFC 7914) under a random per-collection salt recorded in the config, and every use of the
  key goes through that stretched key: HKDF-SHA256 (RFC 5869) subkeys for the noise streams,
  the text stage's surrogates, the restore records, the wrap of a sealed store's data key and a
  128-bit key check value. Testing one key guess therefore
  costs one scrypt evaluation, whether the attacker holds the check value, a known text with
  its stored vector, or a known name with its surrogate.
* :func:`generate` makes a key (256 bits from the OS); a key shorter than 16 bytes, one byte
  repeated or a pattern of at most 4 bytes repeated is refused, and a key given both as a
  parameter and in ``PRIVATE_VECTORS_KEY`` must be the same. :func:`key_scope` hands a key given
  as a parameter to the rebuilds a store performs from its stored config.
* Derivation ``"v1"`` (collections written before): HMAC-SHA256 directly with the raw key and a
  32-bit check value. Kept only so those collections keep reproducing their vectors on
  re-ingestion; never chosen for a new collection.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import json
import numbers
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .config import env_bytes
from .errors import Described, InvalidParameterError, InvalidTypeError
from .guard import holding

__all__ = [
    "DERIVATIONS",
    "KEY_ENV",
    "LATEST_DERIVATION",
    "MIN_KEY_BYTES",
    "SCRYPT_PARAMS",
    "KeySchedule",
    "SecretKey",
    "canonical_context",
    "generate",
    "hkdf_sha256",
    "key_scope",
    "legacy_key_check",
    "make_key_hint",
    "new_salt",
    "surrogate_subkey",
]

KEY_ENV = "PRIVATE_VECTORS_KEY"
MIN_KEY_BYTES = 16
DERIVATIONS = ("v1", "v2")
LATEST_DERIVATION = "v2"
SCRYPT_PARAMS: dict[str, int] = {"n": 2**15, "r": 8, "p": 1}
"""scrypt cost for v2 (32 MiB, ≈0.1-0.3 s once per key and collection); recorded in the config."""
SALT_BYTES = 16
CHECK_BYTES = 16  # 128-bit key check value (v2)
_MAKE_ONE = 'python -c "import private_vectors.keys as k; print(k.generate())"'
_MAX_PERIOD = 4  # a key repeating a pattern of this many bytes or fewer is refused
_SCOPED: contextvars.ContextVar[SecretKey | None] = contextvars.ContextVar("private_vectors_key_scope", default=None)
"""The key of :func:`key_scope`: a ContextVar because Chroma rebuilds a stored function from its
config alone, with no parameter to carry a key given as ``key=`` (without it the rebuild sees no
key: tests/test_process_state.py::test_a_key_scope_hands_a_key_parameter_to_chroma_s_rebuild)."""


def generate() -> str:
    """A new random key (256 bits from the OS's secure source) as URL-safe text.

    The string can be passed as ``key=...`` or put in ``PRIVATE_VECTORS_KEY``; keep it in a
    secret store, never next to the collection it protects.
    """
    return secrets.token_urlsafe(32)


@contextmanager
def key_scope(key: SecretKey | None) -> Iterator[None]:
    """Make ``key`` the key of store rebuilds inside the block (the key a user passed as a
    parameter; Chroma rebuilds stored functions from their config, without parameters)."""
    with holding(_SCOPED, key):
        yield


def scoped_key() -> SecretKey | None:
    """The key set by the innermost :func:`key_scope`, or None."""
    return _SCOPED.get()


class SecretBytes(bytes):
    """Subkey bytes whose repr is redacted (a traceback showing locals prints ``<secret>``)."""

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("key material is never pickled")


def make_key_hint() -> str:
    """How to make a good key (used in error messages)."""
    return f"make one with: {_MAKE_ONE} (or secrets.token_urlsafe(32)) and pass it as key=... or set {KEY_ENV}"


def _weakness(secret: bytes, min_bytes: int) -> str | None:
    """What makes ``secret`` guessable (its length, one repeated byte, a short repeating
    pattern), described without its content; None for an acceptable key."""
    if len(secret) < min_bytes:
        return f"<a secret of {len(secret)} bytes>"
    if min_bytes < MIN_KEY_BYTES:
        return None  # a legacy (v1) collection's key: accepted as it was written
    for period in range(1, _MAX_PERIOD + 1):
        if all(secret[i] == secret[i % period] for i in range(len(secret))):
            what = "one byte repeated" if period == 1 else f"a {period}-byte pattern repeated"
            return f"<a secret of {len(secret)} bytes that is {what}>"
    return None


class SecretKey:
    """A secret key whose bytes never reach a repr, str, pickle, config or error message.

    Build it with :meth:`resolve`. The raw bytes are only read by this module's derivations.
    """

    __slots__ = ("__weakref__", "_lock", "_schedules", "_secret", "source")

    def __init__(self, secret: bytes, source: str) -> None:
        if not isinstance(secret, bytes):  # pragma: no cover - internal use only
            raise InvalidTypeError("secret", "bytes", Described(f"<{type(secret).__name__}>"))
        self._secret = secret
        self.source = source
        self._lock = threading.Lock()
        self._schedules: dict[tuple[bytes, int, int, int], KeySchedule] = {}

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def resolve(cls, key: Any, *, min_bytes: int = MIN_KEY_BYTES, env: str | None = KEY_ENV) -> SecretKey | None:
        """A :class:`SecretKey` from ``key`` (str, bytes, a SecretKey) or, when None, from the
        innermost :func:`key_scope` or env ``env`` (``env=None``: no environment lookup).

        Returns None when no key is given and the variable is unset or empty.

        Raises:
            InvalidParameterError: naming ``key``, for a key under ``min_bytes`` bytes, one
                byte repeated or a pattern of at most 4 bytes repeated (new keys), or a key
                given both ways (parameter and environment) that differ. The message never
                contains the key, and no frame of this call keeps it in a local once raised.
            InvalidTypeError: naming ``key``, for a key of another type.
        """
        if isinstance(key, SecretKey):
            return key
        if key is None:
            scoped = _SCOPED.get()
            from_env = cls._from_env(env, min_bytes)
            if scoped is not None and from_env is not None and scoped != from_env:
                raise _conflict(env)
            return scoped if scoped is not None else from_env
        problem, secret = _coerce(key, "parameter", env or KEY_ENV)
        del key  # never visible in a traceback's locals from here on
        if problem is not None:
            secret = None
            raise problem
        assert secret is not None
        try:
            out = cls._checked(secret, "parameter", min_bytes, env)
        finally:
            secret = None
        if env is not None:
            other = env_bytes(env)
            if other and not hmac.compare_digest(other, out._secret):
                other = None
                raise _conflict(env)
            other = None
        return out

    @classmethod
    def _from_env(cls, env: str | None, min_bytes: int) -> SecretKey | None:
        raw = env_bytes(env) if env is not None else None
        if not raw:
            return None
        assert env is not None
        try:
            return cls._checked(raw, "env", min_bytes, env)
        finally:
            raw = None

    @classmethod
    def _checked(cls, secret: bytes, source: str, min_bytes: int, env: str | None) -> SecretKey:
        weak = _weakness(secret, min_bytes)
        if weak is None:
            return cls(secret, source)
        secret = b""
        where = f"env {env}" if source == "env" else "key"
        raise InvalidParameterError(
            "key", f"a random secret of at least {min_bytes} bytes", Described(f"{weak[:-1]} from {where}>"),
            note=f"A short or patterned key can be guessed from the stored vectors; {make_key_hint()}")

    # -- protection ----------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"SecretKey(<redacted>, source={self.source!r})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("SecretKey: key material is never pickled; pass the key again (key=...) or set "
                        f"{KEY_ENV} in the process that loads the object")

    def __copy__(self) -> SecretKey:
        return self

    def __deepcopy__(self, memo: Any) -> SecretKey:
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SecretKey):
            return NotImplemented
        return hmac.compare_digest(self._secret, other._secret)

    def __hash__(self) -> int:
        return id(self)

    def __len__(self) -> int:
        return len(self._secret)

    def digest(self, salt: bytes) -> bytes:
        """HMAC-SHA256 of the key under ``salt``: tells two keys apart without revealing either."""
        return hmac.digest(salt, self._secret, "sha256")

    # -- derivations ---------------------------------------------------------------------------
    def schedule(self, version: str, salt: bytes | None = None,
                 scrypt: dict[str, int] | None = None) -> KeySchedule:
        """The subkeys of derivation ``version`` (``"v1"`` or ``"v2"``; v2 needs the salt)."""
        if version == "v1":
            return _schedule_v1(self)
        if version != "v2":
            raise InvalidParameterError("derivation", f"one of {DERIVATIONS}", version)
        if not isinstance(salt, bytes) or len(salt) < 8:
            raise InvalidParameterError("salt", "at least 8 bytes (recorded in the collection config)", salt)
        params = dict(SCRYPT_PARAMS if scrypt is None else scrypt)
        return _schedule_v2(self, salt, params["n"], params["r"], params["p"])


def _conflict(env: str | None) -> InvalidParameterError:
    return InvalidParameterError(
        "key", f"one key: the parameter and env {env} name different secrets", Described("<two different secrets>"),
        note=f"pass key=... or set {env}, or make both the same")


def _utf8_or_none(value: str) -> bytes | None:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        pass
    return None  # raised outside the except block: the UnicodeEncodeError (which holds the text) is dropped


def _coerce(key: Any, source: str, env: str) -> tuple[Exception | None, bytes | None]:
    """(error, None) or (None, secret bytes); errors describe the key without its content."""
    if isinstance(key, str):
        encoded = _utf8_or_none(key)
        if encoded is None:
            return InvalidParameterError(
                "key", "a str that encodes as UTF-8 (or bytes)", Described("<a str with unencodable characters, e.g. a lone "
                "surrogate>"), note=make_key_hint()), None
        return None, encoded
    if isinstance(key, (bytes, bytearray, memoryview)):
        return None, bytes(key)
    return InvalidTypeError("key", "None, a str or bytes secret", Described(f"<{type(key).__name__}>")), None


def new_salt() -> bytes:
    """A random per-collection salt (OS secure source)."""
    return secrets.token_bytes(SALT_BYTES)


def hkdf_sha256(ikm: bytes, *, salt: bytes, info: bytes, length: int = 32) -> bytes:
    """HKDF-SHA256 (RFC 5869): extract with ``salt``, expand with ``info`` to ``length`` bytes."""
    if length > 255 * 32:
        raise InvalidParameterError("length", "at most 8160 bytes", length)
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt or None, info=info).derive(ikm)


def legacy_key_check(secret: SecretKey) -> str:
    """The v1 (32-bit) key check value written by collections before derivation v2."""
    return hmac.new(secret._secret, b"private_vectors/key-id/v1", hashlib.sha256).hexdigest()[:8]


@dataclass(frozen=True, repr=False)
class KeySchedule:
    """The subkeys one derivation version gives for one key (and salt). Repr redacted.

    Attributes:
        version: ``"v1"`` or ``"v2"``.
        noise: subkey of the document/query noise streams.
        surrogate: subkey for the text stage's keyed surrogates.
        check: the key check value (hex) recorded in configs.
        restore: AES-256-GCM key of the encrypted restore data (:mod:`private_vectors.restore`).
        wrap: key of :class:`~private_vectors.sealed.datakey.LocalKeyWrapper`, which wraps a
            sealed store's data key.
    """

    version: str
    noise: bytes
    surrogate: bytes
    check: str
    restore: bytes = b""
    wrap: bytes = b""

    def __repr__(self) -> str:
        return f"KeySchedule(version={self.version!r}, <redacted>)"

    def __reduce__(self) -> Any:
        raise TypeError("KeySchedule: key material is never pickled")


def _schedule_v1(secret: SecretKey) -> KeySchedule:
    raw = secret._secret
    return KeySchedule("v1", noise=SecretBytes(raw), surrogate=SecretBytes(raw), check=legacy_key_check(secret),
                       restore=SecretBytes(hkdf_sha256(raw, salt=b"", info=b"private_vectors/v1/restore")),
                       wrap=SecretBytes(hkdf_sha256(raw, salt=b"", info=b"private_vectors/v1/wrap")))


def _schedule_v2(secret: SecretKey, salt: bytes, n: int, r: int, p: int) -> KeySchedule:
    cache_key = (salt, n, r, p)
    with secret._lock:  # stretch once per key object and salt
        cached = secret._schedules.get(cache_key)
        if cached is not None:
            return cached
        stretched = hashlib.scrypt(secret._secret, salt=salt, n=n, r=r, p=p, maxmem=256 * r * n + (1 << 20),
                                   dklen=32)
        sched = KeySchedule(
            "v2",
            noise=SecretBytes(hkdf_sha256(stretched, salt=salt, info=b"private_vectors/v2/noise")),
            surrogate=SecretBytes(hkdf_sha256(stretched, salt=salt, info=b"private_vectors/v2/surrogate")),
            check=hkdf_sha256(stretched, salt=salt, info=b"private_vectors/v2/key-check", length=CHECK_BYTES).hex(),
            restore=SecretBytes(hkdf_sha256(stretched, salt=salt, info=b"private_vectors/v2/restore")),
            wrap=SecretBytes(hkdf_sha256(stretched, salt=salt, info=b"private_vectors/v2/wrap")),
        )
        del stretched
        secret._schedules[cache_key] = sched
        return sched


def surrogate_subkey(key: SecretKey | str | bytes, *, salt: bytes | None = None) -> bytes:
    """The text stage's surrogate subkey through the stretched key (derivation v2).

    Args:
        key: the secret (a :class:`SecretKey`, str or bytes of >= 16 bytes).
        salt: the collection's salt when there is one; default: a fixed, public domain salt
            (the Sanitizer has no collection), so surrogates stay stable across processes.
    """
    secret = SecretKey.resolve(key)
    if secret is None:
        raise InvalidParameterError("key", "a secret for keyed surrogates", None, note=make_key_hint())
    return secret.schedule("v2", salt if salt is not None else b"private_vectors/surrogates/v2").surrogate


def canonical_context(obj: Any) -> bytes:
    """Round-trip-stable canonical bytes of a JSON-like configuration (derivation v2 context).

    Every number (not bool) becomes the hex form of its float32 rounding, so a value that a
    store's JSON round trip returns one ulp off (Chroma returns 0.051031036307982884 as
    0.05103103630798288) or as an int (10.0 -> 10) gives the same bytes. Keys are sorted.
    """
    return json.dumps(_canonical_numbers(obj), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True).encode("ascii")


def _canonical_numbers(obj: Any) -> Any:
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, numbers.Real):
        return {"f32": float(np.float32(float(obj))).hex()}
    if isinstance(obj, dict):
        return {str(k): _canonical_numbers(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_canonical_numbers(v) for v in obj]
    return str(obj)
