"""The text stage's subkeys and key check values (derived with :mod:`private_vectors.keys`).

With a key: HMAC subkeys of the surrogate subkey (stable for the key across processes, so
surrogates and index entries agree between a store's writers) for the keyed entity index and
for hiding secrets in configs, and a check value of the key under a random per-store salt
(128 bits from the key stretched with scrypt; never the key), so two stores under one key record
unrelated check values. Without a key: a random per-instance subkey (nothing to restore).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigMismatchError
from ..keys import SecretBytes, SecretKey
from .surrogates import _surrogate_subkey

__all__ = ["SANITIZER_SALT", "StageKeys", "stage_key"]

SANITIZER_SALT = b"private_vectors/surrogates/v2"
"""Public domain salt of the check value written before each store had its own salt, and of
the restore records of a keyed Sanitizer used without a store."""


def stage_key(key: Any) -> SecretKey | None:
    """The key as a redacted :class:`SecretKey` (>= 16 bytes); None only when no key is given
    (unlike PrivateEmbedding, the text stage does not read ``PRIVATE_VECTORS_KEY``)."""
    return None if key is None else SecretKey.resolve(key, env=None)


class StageKeys:
    """The index and config subkeys of one text stage, and its key check value.

    Args:
        key: the user's key (a redacted :class:`~private_vectors.keys.SecretKey`) or None.
    """

    def __init__(self, key: SecretKey | None) -> None:
        self._key = key
        root = _surrogate_subkey(key) if key is not None else SecretBytes(secrets.token_bytes(32))
        self.index_key = SecretBytes(hmac.digest(root, b"private_vectors/text/query-index/v1", "sha256"))
        self.config_key = SecretBytes(hmac.digest(root, b"private_vectors/text/config-secrets/v1", "sha256"))
        self.salt = secrets.token_bytes(16)
        self._check: str | None = None if key is not None else hmac.digest(root, b"key-id", "sha256").hex()[:16]
        del root

    def __repr__(self) -> str:
        return f"StageKeys(keyed={self.keyed})"

    @property
    def keyed(self) -> bool:
        return self._key is not None

    def key_id(self) -> str:
        """Check value of the key under this stage's salt (computed once, on first need)."""
        if self._check is None:
            assert self._key is not None
            self._check = self._key.schedule("v2", self.salt).check
        return self._check

    def matches(self, salt_hex: Any, check: Any) -> bool:
        """Whether the key gives ``check`` under ``salt_hex`` (None: the legacy public salt)."""
        if self._key is None or not isinstance(check, str) or not check:
            return False
        if salt_hex is None:
            return hmac.compare_digest(check, self._key.schedule("v2", SANITIZER_SALT).check)
        try:
            salt = bytes.fromhex(str(salt_hex))
        except ValueError:
            return False
        if salt == self.salt:
            return hmac.compare_digest(check, self.key_id())
        return hmac.compare_digest(check, self._key.schedule("v2", salt).check)

    def adopt_salt(self, salt_hex: str) -> None:
        """Record the check value under a stored salt (a reopened store keeps its salt)."""
        self.salt = bytes.fromhex(salt_hex)
        self._check = None

    def config_fields(self) -> dict[str, str]:
        """The key check fields of a config (none without a key)."""
        return {"key_salt": self.salt.hex(), "key_check": self.key_id()} if self._key is not None else {}

    def state_fields(self) -> dict[str, Any]:
        """The key fields of a keyed index's state header."""
        head: dict[str, Any] = {"keyed": self._key is not None, "key_id": self.key_id()}
        if self._key is not None:
            head["key_salt"] = self.salt.hex()
        return head

    def state_matches(self, state: Mapping[str, Any]) -> bool:
        """Whether a saved index header was made under this key (an unkeyed index: this instance)."""
        if self._key is not None:
            return self.matches(state.get("key_salt"), state.get("key_id"))
        return state.get("key_id") == self.key_id()

    def check_config(self, config: Mapping[str, Any], where: str) -> None:
        """Refuse a keyed text-stage config whose key check value is missing or belongs to another
        key; adopt its salt (a store keeps the check value it was written with).

        Raises:
            ConfigMismatchError: naming ``where``, never the key.
        """
        if not config.get("keyed"):
            return
        salt, check = config.get("key_salt"), config.get("key_check")
        if salt is None and check is None:  # written before each store had its own salt
            check = config.get("key_id")
        if not isinstance(check, str) or not check:
            raise ConfigMismatchError(f"{where}: the text stage's key check value is missing; the config was edited "
                                      "or truncated (a keyed text stage always records one)")
        if not self.matches(salt, check):
            raise ConfigMismatchError(f"{where}: the key does not match the key the text stage was written with")
        if salt is not None:
            self.adopt_salt(str(salt))
