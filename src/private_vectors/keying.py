"""The keyed-noise state of one embedding function (:class:`Keying`): which derivation, salt and
scrypt cost its key is used under, how a reopened collection's key is verified against the
stored check value, and the public context keyed noise is bound to. Key bytes themselves are
handled only by :mod:`private_vectors.keys`."""

from __future__ import annotations

import hashlib
import hmac
import threading
from typing import Any

from .errors import ConfigMismatchError, Described, InvalidParameterError, InvalidTypeError
from .keys import (
    DERIVATIONS,
    KEY_ENV,
    LATEST_DERIVATION,
    MIN_KEY_BYTES,
    SALT_BYTES,
    SCRYPT_PARAMS,
    KeySchedule,
    SecretKey,
    canonical_context,
    make_key_hint,
    new_salt,
)


def keyed_context_v2(*, encoder: dict[str, Any], mechanism: Any, eps: float, unit: float, concept: Any) -> bytes:
    """The public context of v2 keyed noise: encoder identity ‖ mechanism config, canonicalised
    (:func:`canonical_context`) so a store's JSON round trip cannot change it. Folder paths are
    left out (a moved artefact keeps its noise); content hashes identify learned mechanisms and concepts."""
    mech = {k: v for k, v in mechanism.items() if k != "path"} if isinstance(mechanism, dict) else mechanism
    if isinstance(concept, dict):
        concept = {k: concept[k] for k in ("sha256", "fingerprint", "name", "estimator", "builtin") if k in concept} \
            or {k: v for k, v in concept.items() if k not in ("path", "folder")}
    return canonical_context({"v": LATEST_DERIVATION, "encoder": encoder, "mechanism": mech, "eps": eps,
                              "unit": unit, "concept": concept})


class Keying:
    """The keyed-noise state of one embedding function: its key, its derivation (version, salt,
    scrypt cost) and what the collection it was reopened on expects.

    A new keyed function gets derivation v2. Its scrypt salt is fixed on first need:
    **random** when a store records the config first (Chroma through the registered function,
    ``chroma_store``, a FAISS index, pickling: :meth:`config`), so each collection gets its own;
    **derived from the public context** (:attr:`default_salt`) when documents are embedded before
    any config was recorded (e.g. LangChain's plain ``Chroma``, which keeps no config), so
    re-ingestion in a later process still reproduces the vectors. Reopening a collection
    (:meth:`bind`) verifies the key against the stored check value and adopts the stored
    derivation and salt.
    """

    def __init__(self, secret: SecretKey | None) -> None:
        self.secret = secret
        self.version = LATEST_DERIVATION
        self.salt: bytes | None = None
        self.default_salt = b"private_vectors/v2/default-salt"  # replaced by a context hash (set_context)
        self.scrypt = dict(SCRYPT_PARAMS)
        self.expected: dict[str, Any] | None = None  # stored keying of a reopened collection
        self.used = False  # documents were embedded under (version, salt)
        self._lock = threading.RLock()  # the salt is fixed once, by whichever need comes first

    def __repr__(self) -> str:
        return f"Keying(keyed={self.keyed}, version={self.version!r})"

    @property
    def keyed(self) -> bool:
        return self.secret is not None

    def fix_salt(self, salt: bytes) -> None:
        """Use ``salt`` (public, ≥ 16 bytes) instead of a random or context-derived one: keyed
        vectors are then reproducible across processes for the same key (benchmarks, tests)."""
        if not isinstance(salt, (bytes, bytearray)):
            raise InvalidTypeError("key_salt", f"bytes (at least {SALT_BYTES})", salt)
        if len(salt) < SALT_BYTES:
            raise InvalidParameterError("key_salt", f"bytes of at least {SALT_BYTES} bytes", Described(f"{len(salt)} bytes"))
        if self.secret is None:
            raise InvalidParameterError("key_salt", "a salt only together with a key (keyed noise)",
                                        Described("a salt without a key"))
        with self._lock:
            self.salt = bytes(salt)

    def set_context(self, context: bytes) -> None:
        """Derive the default salt from the function's public context (no secret in it)."""
        self.default_salt = hashlib.sha256(b"private_vectors/v2/default-salt\x00" + context).digest()[:SALT_BYTES]

    def schedule(self) -> KeySchedule:
        """The subkeys under the current derivation (stretching the key on first use)."""
        if self.secret is None:
            raise InvalidParameterError("key", "a secret for keyed noise", None, note=make_key_hint())
        if self.version == "v2" and len(self.secret) < MIN_KEY_BYTES:
            raise InvalidParameterError("key", f"a secret of at least {MIN_KEY_BYTES} bytes for a new collection",
                                        Described(f"<a secret of {len(self.secret)} bytes>"), note=make_key_hint())
        with self._lock:
            if self.salt is None:
                self.salt = self.default_salt  # no config recorded yet: reproducible without one
            version, salt, scrypt = self.version, self.salt, self.scrypt
        return self.secret.schedule(version, salt, scrypt)

    def config(self) -> dict[str, Any]:
        """JSON-safe keying fields of the config: derivation, salt, check value; never the key."""
        if self.secret is None:
            if self.expected is not None:  # a keyless reader of a keyed collection keeps its record
                return dict(self.expected)
            return {"keyed": False}
        with self._lock:
            if self.salt is None:
                self.salt = new_salt()  # a store records this config: a salt of its own
        sched = self.schedule()
        if self.version == "v1":
            return {"keyed": True, "key_derivation": "v1", "key_id": sched.check}
        assert self.salt is not None
        return {"keyed": True, "key_derivation": "v2", "key_salt": self.salt.hex(), "key_scrypt": dict(self.scrypt),
                "key_check": sched.check}

    @staticmethod
    def stored_fields(config: dict[str, Any]) -> dict[str, Any]:
        """The keying fields of a stored config (old configs: v1 when keyed)."""
        if not config.get("keyed"):
            return {"keyed": False}
        out: dict[str, Any] = {k: config[k] for k in ("keyed", "key_derivation", "key_id", "key_salt", "key_scrypt", "key_check")
               if k in config}
        out.setdefault("key_derivation", "v1")
        return out

    def bind(self, config: dict[str, Any], where: str) -> None:
        """Adopt the derivation of a stored config after checking the key against it.

        Raises:
            ConfigMismatchError: a different key (named by ``where``, never the key), or this
                function already embedded documents under another derivation.
        """
        stored = self.stored_fields(config)
        if not stored["keyed"]:
            return  # an unkeyed collection: the drift check on "keyed" decides
        version = stored["key_derivation"]
        if version not in DERIVATIONS:
            raise ConfigMismatchError(f"{where} uses key derivation {version!r}, unknown to this version of "
                                      "private_vectors; upgrade the library")
        if version == "v2":
            try:
                salt = bytes.fromhex(str(stored.get("key_salt", "")))
                scrypt = {k: int(stored["key_scrypt"][k]) for k in ("n", "r", "p")}
            except (KeyError, TypeError, ValueError) as exc:
                raise ConfigMismatchError(f"{where}: its keyed-noise record is incomplete ({type(exc).__name__}); "
                                          "the config was edited or truncated") from None
        else:
            salt, scrypt = self.salt or self.default_salt, self.scrypt
        self.expected = stored
        if self.secret is None:
            return  # a reader without the key may query; adding documents is refused later
        check = stored.get("key_id") if version == "v1" else stored.get("key_check")
        if not isinstance(check, str) or not check:
            raise ConfigMismatchError(f"{where}: its key check value is missing; the config was edited or "
                                      "truncated (a keyed collection always records one), so no key can be verified")
        sched = self.secret.schedule(version, salt, scrypt)
        if not hmac.compare_digest(check, sched.check):
            raise ConfigMismatchError(
                f"{where}: the key does not match the key it was written with (key check value differs); "
                f"use the same key (key=... or {KEY_ENV}) or write to a new collection")
        with self._lock:
            if self.used and (version, salt) != (self.version, self.salt):
                raise ConfigMismatchError(
                    f"{where}: this PrivateEmbedding already embedded documents for another keyed collection "
                    "(another salt); use one PrivateEmbedding per keyed collection")
            self.version, self.salt, self.scrypt = version, salt, scrypt

    def check_for_documents(self, where: str = "this collection") -> None:
        """Refuse to embed documents for a keyed collection without its key."""
        if self.expected is not None and self.expected.get("keyed") and self.secret is None:
            raise ConfigMismatchError(
                f"{where} was written with keyed noise; pass key=... or set {KEY_ENV} to the same key before "
                "adding documents (fresh noise on re-ingested texts would let an attacker average copies)")
