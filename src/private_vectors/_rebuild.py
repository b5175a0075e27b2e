"""Rebuilding a :class:`~private_vectors.embedding.PrivateEmbedding` from a stored config,
reusing the loaded stages of an equal config built in this process."""

from __future__ import annotations

import warnings
from typing import Any

from ._build_cache import cached_build, remember_build
from .config import rebuild_arguments, validate_config
from .errors import PrivacyWarning
from .keying import Keying
from .keys import MIN_KEY_BYTES, SecretKey

__all__ = ["built_for"]


def built_for(cls: Any, config: dict[str, Any], where: str, *, use_cache: bool = True,
              seal: Any = None) -> tuple[Any, bool]:
    """The embedding function (a ``cls``, :class:`~private_vectors.embedding.PrivateEmbedding`) of a
    stored config (key from ``PRIVATE_VECTORS_KEY``; another key is refused, naming ``where``;
    ``seal``: e.g. a sealed store's keyring), reusing the stages of an equal config built here; and
    whether it is that shared build, which is never handed out (the caller wraps it in a fresh adapter)."""
    validate_config(config)
    stored = Keying.stored_fields(config)
    if use_cache and seal is None:
        cached = cached_build(config)
        if cached is not None and cached.pipeline.keying.keyed == bool(stored["keyed"]):  # (set_key may key it)
            env = SecretKey.resolve(None, min_bytes=1)
            if env is None or not cached.pipeline.keying.keyed or cached.pipeline.keying.secret == env:
                return cached, True  # (another key in the environment: checked below)
    secret = SecretKey.resolve(None, min_bytes=1 if stored.get("key_derivation") == "v1" else MIN_KEY_BYTES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        ef = cls(**rebuild_arguments(config), key=secret, seal=seal)
    if not stored["keyed"] and secret is not None:
        ef.pipeline.keying, ef.key_source = Keying(None), "none"  # an unkeyed collection stays unkeyed
    ef.pipeline.bind(config, where)
    if use_cache and seal is None:  # the cached build is never handed out: a caller's may be remembered as live
        remember_build(config, ef)
        return ef, True
    return ef, False
