"""A sealed store's data key: made once per store, wrapped by the user's key (or a KMS), never stored in clear.

* The **data key** (DEK) is 32 bytes from the OS (:mod:`secrets`). Every key a sealed store uses
  is an HKDF-SHA256 (RFC 5869) subkey of it under the store id, each with its own label
  (:class:`DataKey`): record keys, the marker key, the id key, the record nonce key, the keyring
  keys and the query-index reference key.
* A :class:`KeyWrapper` (the interface of a KMS's Encrypt/Decrypt, e.g. AWS KMS or Vault transit)
  wraps the DEK; the wrapped DEK and the wrapper's :meth:`~KeyWrapper.describe` are recorded in
  the store's configuration. :class:`LocalKeyWrapper` is the default: AES-256-GCM-SIV (RFC 8452)
  under the ``wrap`` subkey of the user's stretched key (:class:`~private_vectors.keys.KeySchedule`),
  the wrap's associated data binding the store id and key salt. Rotating the wrapping key
  rewraps the DEK alone; no record is touched.
* A :class:`KeyStore` holds per-document keys apart from the store (:class:`KeyringFile`): a
  deleted document's key is destroyed, so no copy of the store taken before the deletion opens
  it again (crypto-shredding). Entries are named by keyed HMACs and hold keys wrapped by the DEK.
* :class:`SealBinding` is one embedding function's sealing state: its options, the store it is
  bound to and the unwrapped DEK, created when a store first records the configuration or the
  first record is sealed, adopted from a store's configuration on reopen.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import (
    ConfigMismatchError,
    Described,
    InvalidParameterError,
    InvalidTypeError,
    SealedStoreError,
)
from ..keys import KEY_ENV, SecretBytes, SecretKey, hkdf_sha256, make_key_hint
from .options import KEYRING_NOT_GIVEN, Sealing

__all__ = ["KeyStore", "KeyWrapper", "KeyringFile", "LocalKeyWrapper"]

DATA_KEY_BYTES = 32
STORE_ID_BYTES = 16
_WRAP_AAD = b"private_vectors/data-key/v1\x00"
_NONCE = 12


class DataKey:
    """A store's data key and its store id; subkeys by label. Repr redacted, never pickled."""

    __slots__ = ("__weakref__", "_key", "store_id")

    def __init__(self, key: bytes, store_id: bytes) -> None:
        if len(key) != DATA_KEY_BYTES or len(store_id) != STORE_ID_BYTES:
            raise InvalidParameterError("data_key", f"{DATA_KEY_BYTES} key bytes and a {STORE_ID_BYTES}-byte store id",
                                        Described(f"<{len(key)} and {len(store_id)} bytes>"))
        self._key = SecretBytes(key)
        self.store_id = bytes(store_id)

    def __repr__(self) -> str:
        return f"DataKey(<redacted>, store={self.store_id.hex()})"

    def __reduce__(self) -> Any:
        raise TypeError("DataKey: key material is never pickled")

    def subkey(self, label: str, context: bytes = b"") -> bytes:
        """HKDF-SHA256(DEK, salt = store id, info = ``private_vectors/sealed/v1/<label>`` ‖ 0 ‖ context)."""
        info = b"private_vectors/sealed/v1/" + label.encode("ascii") + b"\x00" + context
        return SecretBytes(hkdf_sha256(self._key, salt=self.store_id, info=info))

    def exposed(self) -> bytes:
        """The raw DEK, for a :class:`KeyWrapper` only."""
        return self._key


@runtime_checkable
class KeyWrapper(Protocol):
    """Wraps and unwraps a store's data key (KMS-style Encrypt/Decrypt with an encryption context).

    ``wrap(data_key, context) -> str`` returns a JSON-safe string; ``unwrap(wrapped, context) ->
    bytes`` must refuse a wrapped key made under another context; ``describe() -> dict`` is a
    JSON-safe, non-secret identity (a KMS key ARN, a Vault key name) recorded in the config.
    """

    def wrap(self, data_key: bytes, context: bytes) -> str: ...

    def unwrap(self, wrapped: str, context: bytes) -> bytes: ...

    def describe(self) -> dict[str, Any]: ...


@runtime_checkable
class KeyStore(Protocol):
    """Holds per-document keys apart from the store: ``get(name)`` (None when absent),
    ``put(name, value)`` (idempotent: an existing value is kept), ``destroy(name)``."""

    def get(self, name: str) -> bytes | None: ...

    def put(self, name: str, value: bytes) -> None: ...

    def destroy(self, name: str) -> None: ...


def wrap_context(store_id: bytes, keying: Any) -> bytes:
    """The public context a data key is wrapped under: store id, key salt and scrypt cost."""
    salt = keying.salt.hex() if keying.salt is not None else None
    return json.dumps({"purpose": "private_vectors/data-key", "store": store_id.hex(), "key_salt": salt,
                       "key_scrypt": dict(keying.scrypt)}, sort_keys=True, separators=(",", ":")).encode("ascii")


class LocalKeyWrapper:
    """AES-256-GCM-SIV (RFC 8452) under the ``wrap`` subkey of a user key, stretched under the key
    salt the context names (:func:`wrap_context`); the context is the associated data.

    Args:
        key: the wrapping secret (str, bytes or a SecretKey); default: ``PRIVATE_VECTORS_KEY``.
            A store uses its own key by default; give another key here to rotate the key that
            protects the data key apart from the one keying the noise.
    """

    def __init__(self, key: Any = None) -> None:
        try:
            secret = SecretKey.resolve(key)
        finally:
            del key
        if secret is None:
            raise InvalidParameterError("key", "a secret to wrap the data key with", None, note=make_key_hint())
        self._secret = secret

    def __repr__(self) -> str:
        return "LocalKeyWrapper(<key redacted>)"

    def __reduce__(self) -> Any:
        raise TypeError(f"LocalKeyWrapper holds key material and is never pickled; build it again with the key "
                        f"(or {KEY_ENV})")

    def describe(self) -> dict[str, Any]:
        return {"kind": "local"}

    def _aead(self, context: bytes) -> Any:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

        try:
            ctx = json.loads(context)
            salt = bytes.fromhex(ctx["key_salt"])
            scrypt = {k: int(ctx["key_scrypt"][k]) for k in ("n", "r", "p")}
        except (ValueError, KeyError, TypeError):
            raise InvalidParameterError("context", "a data-key context with the key salt (wrap_context)",
                                        Described(f"<{len(context)} bytes>")) from None
        return AESGCMSIV(bytes(self._secret.schedule("v2", salt, scrypt).wrap))

    def wrap(self, data_key: bytes, context: bytes) -> str:
        nonce = secrets.token_bytes(_NONCE)
        sealed = nonce + self._aead(context).encrypt(nonce, bytes(data_key), _WRAP_AAD + context)
        return base64.urlsafe_b64encode(sealed).decode("ascii")

    def unwrap(self, wrapped: str, context: bytes) -> bytes:
        from cryptography.exceptions import InvalidTag

        try:
            raw = base64.urlsafe_b64decode(str(wrapped).encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            raw = b""
        try:
            return self._aead(context).decrypt(raw[:_NONCE], raw[_NONCE:], _WRAP_AAD + context)
        except (InvalidTag, ValueError):
            pass
        raise SealedStoreError("the store's data key does not unwrap with this key (another key, another wrapper, "
                               "or an edited configuration); use the key the store was sealed with")


class KeyringFile:
    """Per-document keys in one JSON file held apart from the store (a :class:`KeyStore`).

    Values are opaque bytes (the library puts keys wrapped by the store's data key there, under
    names that are keyed HMACs, never ids). Every change rewrites the file atomically (a
    temporary file, fsync, rename), so a destroyed key is gone from the file at once; the
    filesystem may keep old blocks until they are reused. Keep this file out of the store's
    backups: a backup of both undoes crypto-shredding. Losing it loses every document.

    Args:
        path: the file (created on the first key).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidTypeError("keyring", "a path (str or PathLike)", Described(f"<{type(path).__name__}>"))
        self.path = Path(path)
        self._lock = threading.RLock()
        self._entries: dict[str, str] | None = None
        self._stamp: tuple[int, int] | None = None

    def __repr__(self) -> str:
        return "KeyringFile(<path>)"

    def _load(self) -> dict[str, str]:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._entries, self._stamp = {}, None
            return self._entries
        stamp = (st.st_mtime_ns, st.st_size)
        if self._entries is None or stamp != self._stamp:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                entries = {str(k): str(v) for k, v in dict(data["keys"]).items()}
            except (ValueError, KeyError, TypeError):
                raise SealedStoreError("the keyring file is not a private_vectors keyring (edited or truncated); "
                                       "restore it from its own backup") from None
            self._entries, self._stamp = entries, stamp
        return self._entries

    def _write(self, entries: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + f".tmp-{os.getpid()}-{secrets.token_hex(4)}")
        body = json.dumps({"v": 1, "keys": entries}, sort_keys=True, separators=(",", ":")).encode("ascii")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, body)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        st = self.path.stat()
        self._entries, self._stamp = entries, (st.st_mtime_ns, st.st_size)

    def get(self, name: str) -> bytes | None:
        with self._lock:
            value = self._load().get(name)
        return None if value is None else base64.urlsafe_b64decode(value.encode("ascii"))

    def put(self, name: str, value: bytes) -> None:
        self.put_many({name: value})

    def put_many(self, items: Mapping[str, bytes]) -> None:
        """Add every absent name in one rewrite (existing values are kept)."""
        with self._lock:
            entries = dict(self._load())
            new = {k: base64.urlsafe_b64encode(bytes(v)).decode("ascii") for k, v in items.items() if k not in entries}
            if new:
                self._write({**entries, **new})

    def destroy(self, name: str) -> None:
        self.destroy_many([name])

    def destroy_many(self, names: Iterable[str]) -> None:
        """Remove every named key in one rewrite."""
        with self._lock:
            entries = dict(self._load())
            gone = [n for n in names if n in entries]
            for n in gone:
                del entries[n]
            if gone:
                self._write(entries)


def _keystore(keyring: Any) -> Any:
    if keyring is KEYRING_NOT_GIVEN:
        return None
    if keyring is None or not isinstance(keyring, (str, os.PathLike)):
        return keyring
    return KeyringFile(keyring)


class SealBinding:
    """One embedding function's sealing state: the resolved :class:`Sealing` (None: not sealed),
    the choice as written (None adopts a store's setting on reopen), and the data key of the store
    it is bound to. Repr redacted; its data key never reaches a config, a log or a pickle.
    """

    def __init__(self, sealing: Sealing | None, written: Any) -> None:
        self.sealing, self.written = sealing, written
        self.store_id: bytes | None = None
        self.wrapped: str | None = None
        self.wrapper_info: dict[str, Any] | None = None
        self.stored: Any = None  # the store's recorded "seal" entry, once bound
        self.used = False  # a record was sealed or opened under this store's data key
        self._dek: DataKey | None = None
        self._sealer: Any = None
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"SealBinding(sealed={self.sealing is not None}, bound={self.store_id is not None}, <key redacted>)"

    def __reduce__(self) -> Any:
        raise TypeError("SealBinding holds key material and is never pickled")

    def fresh(self) -> SealBinding:
        """The same choice, unbound (a rebuilt function gets its own binding)."""
        return SealBinding(_initial(self), self.written)

    @property
    def sealed(self) -> bool:
        return self.sealing is not None

    # -- the recorded entry ------------------------------------------------------------------
    def config(self, keying: Any) -> Any:
        """``False`` (not sealed) or the settings with the data key record (creating it when
        the function has none yet): ``{"v", "readable_metadata", "ids", "vector", "keyring",
        "data_key": {"store", "wrapper", "wrapped"}}``. Never the data key itself."""
        if self.sealing is None:
            return False
        if not keying.keyed:
            return dict(self.stored) if isinstance(self.stored, dict) else False
        self.data_key(keying)
        assert self.store_id is not None
        return {**self.sealing.settings(), "data_key": {"store": self.store_id.hex(), "wrapper": self.wrapper_info,
                                                        "wrapped": self.wrapped}}

    def bind(self, config: Mapping[str, Any], where: str) -> None:
        """Adopt the sealing a store recorded (``config["seal"]``; absent: not sealed).

        A defaulted choice (``seal=None``) adopts it; ``seal=True`` needs a sealed store, a
        :class:`Sealing` a sealed store whose settings agree with those it sets away from their
        defaults (the others, and its keyring and wrapper, are adopted or used), ``seal=False``
        an unsealed store.

        Raises:
            ConfigMismatchError: naming ``seal``, for another choice; or this function already
                sealed records under another store's data key.
        """
        stored = config.get("seal") if isinstance(config, Mapping) else None
        with self._lock:
            if not stored:
                self._adopt_unsealed(where)
                return
            if self.written is False:
                raise ConfigMismatchError(f"seal: {where} is sealed (its text is kept in sealed records) and seal=False "
                                          "was given; reopen it with seal=None (default)")
            given = self.written if isinstance(self.written, Sealing) else Sealing()
            try:
                recorded = Sealing.from_settings(dict(stored), keyring=given.keyring, wrapper=given.wrapper,
                                                  reader=given)
                data = dict(stored["data_key"])
                store_id = bytes.fromhex(str(data["store"]))
                wrapped, info = str(data["wrapped"]), dict(data["wrapper"])
            except (KeyError, TypeError, ValueError) as exc:
                raise ConfigMismatchError(f"{where}: its sealing record is incomplete ({type(exc).__name__}); the "
                                          "config was edited or truncated") from None
            differs = given.differs_from(recorded) if isinstance(self.written, Sealing) else []
            if differs:
                raise ConfigMismatchError(f"seal: {where} was sealed with other settings ({', '.join(differs)} differ); "
                                          "reopen it with seal=None (default) to use its own")
            if given.wrapper is not None and _describe(given.wrapper) != info:
                raise ConfigMismatchError(f"seal: {where}'s data key is wrapped by {info!r}, the given wrapper is "
                                          f"{_describe(given.wrapper)!r}; rewrap the store to change its wrapper")
            if self.used and self.store_id is not None and store_id != self.store_id:
                raise ConfigMismatchError(f"{where}: this PrivateEmbedding already sealed records for another store "
                                          "(another data key); use one PrivateEmbedding per sealed store")
            if store_id != self.store_id or wrapped != self.wrapped:
                self._dek, self._sealer = None, None
            self.sealing, self.stored = recorded, dict(stored)
            self.store_id, self.wrapped, self.wrapper_info = store_id, wrapped, info

    def _adopt_unsealed(self, where: str) -> None:
        if self.written is True or isinstance(self.written, Sealing):
            raise ConfigMismatchError(f"seal: {where} is not sealed (written with seal=False or before sealing "
                                      "existed) and sealing was asked for; reopen it with seal=None, or migrate it "
                                      "with `private-vectors reseal`")
        if self.used and self.sealing is not None:
            raise ConfigMismatchError(f"{where}: this PrivateEmbedding already sealed records for another store; use "
                                      "one PrivateEmbedding per store")
        self.sealing, self.stored = None, False
        self.store_id = self.wrapped = self.wrapper_info = None
        self._dek = self._sealer = None

    # -- the data key -----------------------------------------------------------------------
    def data_key(self, keying: Any) -> DataKey:
        """The unwrapped data key (made and wrapped on first need when no store recorded one).

        Raises:
            SealedStoreError: naming ``key`` without a key; the wrap does not open.
        """
        with self._lock:
            if self._dek is not None:
                return self._dek
            if self.sealing is None:
                raise InvalidParameterError("seal", "a sealed PrivateEmbedding", False)
            if not keying.keyed:
                raise SealedStoreError(f"key: this store is sealed and no key was given; pass key=... or set {KEY_ENV} "
                                       "to the key it was sealed with (without it nothing of its text can be read)")
            keying.schedule()  # fixes the key salt the wrap context names
            wrapper = self._wrapper(keying)
            if self.wrapped is None:
                store_id, dek = secrets.token_bytes(STORE_ID_BYTES), secrets.token_bytes(DATA_KEY_BYTES)
                self.wrapped = wrapper.wrap(dek, wrap_context(store_id, keying))
                self.store_id, self.wrapper_info = store_id, _describe(wrapper)
            else:
                assert self.store_id is not None
                dek = _unwrapped(wrapper, self.wrapped, wrap_context(self.store_id, keying))
            self._dek = DataKey(dek, self.store_id)
            del dek
            return self._dek

    def _wrapper(self, keying: Any) -> Any:
        assert self.sealing is not None
        if self.sealing.wrapper is not None:
            return self.sealing.wrapper
        if self.wrapper_info is not None and self.wrapper_info.get("kind") != "local":
            raise SealedStoreError(f"seal: this store's data key is wrapped by {self.wrapper_info!r}; pass "
                                   "seal=Sealing(wrapper=...) with that wrapper")
        return LocalKeyWrapper(keying.secret)

    def keystore(self) -> Any:
        """The keyring's :class:`KeyStore` (a path opened as a :class:`KeyringFile`), or None."""
        assert self.sealing is not None
        return _keystore(self.sealing.keyring)

    def sealer(self, keying: Any, build: Any) -> Any:
        """The bound store's :class:`~private_vectors.sealed.records.Sealer`, made once by
        ``build(data_key, sealing, keystore)``."""
        with self._lock:
            dek = self.data_key(keying)
            if self._sealer is None:
                assert self.sealing is not None
                self._sealer = build(dek, self.sealing, self.keystore())
            self.used = True
            return self._sealer

    def rewrap(self, keying: Any, wrapper: Any) -> None:
        """Wrap the same data key under ``wrapper`` (records are untouched; record the config again)."""
        with self._lock:
            dek = self.data_key(keying)
            self.wrapped = wrapper.wrap(dek.exposed(), wrap_context(dek.store_id, keying))
            self.wrapper_info = _describe(wrapper)
            assert self.sealing is not None
            from dataclasses import replace

            self.sealing = replace(self.sealing, wrapper=wrapper)


def _initial(binding: SealBinding) -> Sealing | None:
    """The sealing a fresh binding starts from: the resolved choice before any store was adopted."""
    written = binding.written
    if isinstance(written, Sealing):
        return written
    if written is False:
        return None
    return binding.sealing if binding.sealing is not None else (Sealing() if written is True else None)


def _describe(wrapper: Any) -> dict[str, Any]:
    info = wrapper.describe()
    if not isinstance(info, dict):
        raise InvalidTypeError("wrapper.describe()", "a JSON-safe dict", Described(f"<{type(info).__name__}>"))
    return json.loads(json.dumps(info, sort_keys=True))


def _unwrapped(wrapper: Any, wrapped: str, context: bytes) -> bytes:
    try:
        dek = wrapper.unwrap(wrapped, context)
    except SealedStoreError:
        raise
    except Exception as exc:  # a KMS refusal: say which step, never the values
        raise SealedStoreError(f"the store's data key does not unwrap ({type(exc).__name__}); use the key or "
                               "wrapper the store was sealed with") from None
    if not isinstance(dek, (bytes, bytearray)) or len(dek) != DATA_KEY_BYTES:
        raise SealedStoreError(f"the wrapper returned no {DATA_KEY_BYTES}-byte data key")
    return bytes(dek)


def keyed_name(key: bytes, *parts: str) -> str:
    """A hex HMAC-SHA256 name of ``parts`` (length-prefixed) under ``key``."""
    msg = b"".join(len(p.encode("utf-8")).to_bytes(4, "big") + p.encode("utf-8") for p in parts)
    return hmac.new(key, msg, hashlib.sha256).hexdigest()
