"""The per-process build cache: Chroma rebuilds an embedding function on every config read, so
equal configs built in this process reuse the loaded stages (never refit, never reload).

Kept apart from :mod:`private_vectors.config` (which reads stored records and imports no stage
and no key code): the cache key says which key a rebuild would use (a keyed digest, never the key).
"""

from __future__ import annotations

import hmac
import os
import threading
import weakref
from typing import Any

from .config import KEY_ENV, canonical, env_bytes
from .keys import scoped_key

__all__ = ["cached_build", "remember_build", "remember_live"]

# Process-wide state, on purpose: Chroma rebuilds the function on every config read (each add and
# query of a reopened collection), so a rebuild must find what this process already built. A live
# object with the same config is reused; otherwise one build per (config, key in the environment).
# Without them every read reloads every stage: tests/test_process_state.py::
# test_the_build_cache_spares_chroma_s_rebuilds; the live reuse: tests/test_chroma.py::
# test_rebuild_in_the_same_process_reuses_the_live_stages_in_a_new_object.
_BUILD_CACHE: dict[bytes, Any] = {}
_LIVE: weakref.WeakValueDictionary[bytes, Any] = weakref.WeakValueDictionary()
_BUILD_LOCK = threading.RLock()


def _rounded(obj: Any) -> Any:
    if isinstance(obj, float):
        return float(f"{obj:.12g}")
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_rounded(v) for v in obj]
    return obj


def _build_identity(config: dict[str, Any]) -> bytes:
    """:func:`canonical` with floats to 12 significant digits: Chroma's config store writes
    floats back in a different shortest form (1/√384 returns as ...288 for ...2884), and a
    missed cache hit would rebuild the function (for a keyed text stage, without the key)."""
    return canonical(_rounded(config))


_FINGERPRINT_SALT = os.urandom(32)  # per process: the cache key says which key, never the key itself


def _key_fingerprint() -> bytes:
    """A keyed digest of the key a rebuild would use now (scoped parameter, else environment)."""
    scoped = scoped_key()
    if scoped is not None:
        return scoped.digest(_FINGERPRINT_SALT)
    return hmac.digest(_FINGERPRINT_SALT, env_bytes(KEY_ENV) or b"", "sha256")


def _build_cache_key(config: dict[str, Any]) -> bytes:
    return _build_identity(config) + b"\x00" + _key_fingerprint()


def cached_build(config: dict[str, Any]) -> Any:
    """The object already built for ``config`` in this process, or None."""
    with _BUILD_LOCK:
        return _LIVE.get(_build_identity(config)) or _BUILD_CACHE.get(_build_cache_key(config))


def remember_build(config: dict[str, Any], built: Any) -> None:
    """Cache ``built`` as the rebuild of ``config`` (with the key now in the environment)."""
    with _BUILD_LOCK:
        _BUILD_CACHE[_build_cache_key(config)] = built


def remember_live(config: dict[str, Any], obj: Any) -> None:
    """Let a rebuild of exactly ``config`` in this process reuse ``obj``'s stages (weakly held;
    the first live object of a config stays, so short-lived rebuilds never displace it)."""
    with _BUILD_LOCK:
        _LIVE.setdefault(_build_identity(config), obj)
