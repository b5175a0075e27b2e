"""Sealed records: one AEAD record per document holding what an unsealed store keeps in clear.

A record (``"pvs1." + base64url``) seals, under the document's key, the sanitized text, the
metadata, the restore record (:mod:`private_vectors.restore`), the document's query-index
references, its id and its exact vector (after erasure, before noise). The cipher is
AES-256-GCM-SIV (RFC 8452), nonce-misuse resistant; its nonce is an HMAC of the associated data,
so sealing the same document again (a retried write) gives the same bytes. The associated data
binds the store id, the document's id as the store holds it, the field and the format version,
so a record moved onto another document or into another store does not open; the encoder is not
bound (re-embedding may migrate a store). The plaintext is padded to a size class (powers of two
from 512 bytes to 8 KiB, then multiples of 8 KiB), so a record's length says little of its text.

A document's key is an HKDF subkey of the store's data key and its id
(:class:`~private_vectors.sealed.datakey.DataKey`), or, with a keyring, a random key held in the
keyring (wrapped by the data key) and destroyed when the document is deleted.

The readable ``documents`` value of a sealed store is a :meth:`Sealer.marker`: a keyed HMAC of
the text (equal texts, equal markers; no word of the text). With ``ids="hmac"`` the store's ids
are :meth:`Sealer.stored_id` values.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import math
import secrets
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import (
    Described,
    InvalidParameterError,
    InvalidTypeError,
    SealedRecordError,
    SealedStoreError,
)
from .datakey import DataKey, keyed_name
from .options import Sealing
from .vector_cache import VectorCaches

__all__ = ["SEALED_KEY", "OpenedRecords", "SealedPayload", "Sealer", "is_marker", "is_record"]

RECORD_PREFIX = "pvs1."
MARKER_PREFIX = "pv-sealed:"
SEALED_KEY = "pv_sealed"
"""Metadata key of a document's sealed record in stores with metadata."""
_ID_PREFIX = "pv-"
_AAD_LABEL = b"private_vectors/sealed/v1\x00"
_FORMAT = 1
_DTYPES: dict[str, tuple[int, np.dtype[Any]]] = {"float16": (1, np.dtype("<f2")), "float32": (2, np.dtype("<f4"))}
_BY_CODE: dict[int, np.dtype[Any]] = {code: dt for code, dt in _DTYPES.values()}
_HEADER = struct.Struct(">BIBI")  # format, json length, vector dtype code, dimension
_TAG = 16
_MIN_CLASS, _PAGE = 512, 8192
_URLSAFE = bytes.maketrans(b"-_", b"+/")


def size_class(n: int) -> int:
    """The padded size of ``n`` plaintext bytes: the next power of two from 512 to 8 KiB, then
    the next multiple of 8 KiB."""
    if n <= _PAGE:
        return max(_MIN_CLASS, 1 << (n - 1).bit_length())
    return -(-n // _PAGE) * _PAGE


def is_record(value: Any) -> bool:
    """Whether ``value`` looks like a sealed record (its prefix; opening it is what checks it)."""
    return isinstance(value, str) and value.startswith(RECORD_PREFIX)


def is_marker(value: Any) -> bool:
    """Whether ``value`` is a sealed store's document marker."""
    return isinstance(value, str) and value.startswith(MARKER_PREFIX)


def _b32(digest: bytes) -> str:
    return base64.b32encode(digest).decode("ascii").rstrip("=").lower()[:26]


def _doc_id(doc_id: Any, name: str = "doc_id") -> str:
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or doc_id == "":
        raise InvalidTypeError(name, "a document id (a non-empty str or an int)", Described(f"<{type(doc_id).__name__}>"))
    return str(doc_id)


@dataclass(frozen=True, repr=False)
class SealedPayload:
    """An opened record (it holds the document's text: keep it in memory only).

    Attributes:
        doc_id: the user's id of the document.
        text: the stored text (sanitized, or None when the store keeps none).
        metadata: the key holder's metadata (string values as the text stage left them).
        vector: the exact vector (after erasure, before noise), float32; empty for a record sealed
            with no vector (a LlamaIndex input document or cached node).
        restore: the document's restore record string, or None.
        index_refs: the document's keyed query-index references.
    """

    doc_id: str
    text: str | None
    metadata: dict[str, Any]
    vector: np.ndarray
    restore: str | None = None
    index_refs: tuple[str, ...] = field(default_factory=tuple)

    def __repr__(self) -> str:
        size = None if self.text is None else len(self.text)
        return (f"SealedPayload(<id hidden>, text=<{size} chars>, metadata=<{len(self.metadata)} keys>, "
                f"vector=<{self.vector.shape[0]} dims>, restore={self.restore is not None}, "
                f"index_refs={len(self.index_refs)})")

    def __reduce__(self) -> Any:
        raise TypeError("SealedPayload holds a document's text and is never pickled")


def _check_metadata(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidTypeError("metadata", "a mapping of str keys to str, int, float, bool or None",
                               Described(f"<{type(metadata).__name__}>"))
    bad = [i for i, (k, v) in enumerate(metadata.items()) if not isinstance(k, str) or not _json_value(v)]
    if bad:
        raise InvalidTypeError("metadata", "str keys with str, int, float, bool or None values (or lists and "
                               "dicts of them)", Described(f"<a mapping with unsupported entries at positions {bad[:5]}>"))
    return dict(metadata)


def _json_value(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is a JSON scalar, or a list or str-keyed dict of them (FAISS and
    LlamaIndex metadata nest), at most 16 deep."""
    if value is None or isinstance(value, (str, int, bool)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if depth >= 16:
        return False
    if isinstance(value, (list, tuple)):
        return all(_json_value(v, depth + 1) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _json_value(v, depth + 1) for k, v in value.items())
    return False


def _check_vector(vector: Any) -> np.ndarray:
    arr = np.asarray(vector, dtype=np.float32)
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise InvalidParameterError("vector", "a finite one-dimensional vector", arr)
    return arr


class Sealer:
    """Seals and opens one store's records. Build it with :meth:`for_embedding`; repr redacted,
    never pickled.

    Args:
        data_key: the store's unwrapped data key.
        sealing: the store's :class:`~private_vectors.sealed.options.Sealing`.
        keystore: the keyring (a :class:`~private_vectors.sealed.datakey.KeyStore`) when the store
            keeps per-document keys apart.
    """

    def __init__(self, data_key: DataKey, sealing: Sealing, *, keystore: Any = None) -> None:
        if not isinstance(data_key, DataKey):
            raise InvalidTypeError("data_key", "a DataKey", Described(f"<{type(data_key).__name__}>"))
        if sealing.has_keyring and keystore is None:
            raise SealedStoreError("keyring: this store keeps per-document keys in a keyring; pass "
                                   "seal=Sealing(keyring=...) with its path or KeyStore")
        self._dk, self.sealing, self._keystore = data_key, sealing, keystore
        self.store = data_key.store_id.hex()
        self._marker_key = data_key.subkey("marker")
        self._id_key = data_key.subkey("id")
        self._nonce_key = data_key.subkey("nonce")
        self._ring_name_key = data_key.subkey("keyring-name")
        self._ring_wrap_key = data_key.subkey("keyring-wrap")
        self.index_key = data_key.subkey("query-index")
        """Subkey that keys the query index's sealed reference counts."""
        self._aad_head = _AAD_LABEL + b'{"field":"doc","id":'
        self.caches = VectorCaches(sealing.vector_cache, sealing.vector_cache_max_age)
        """The key holder's exact vectors kept in memory, per store read (:mod:`~private_vectors.sealed.vector_cache`)."""
        self._aad_tail = b',"store":' + json.dumps(self.store).encode("ascii") + b',"v":' + str(_FORMAT).encode() + b"}"

    def __repr__(self) -> str:
        return f"Sealer(store={self.store}, keyring={self._keystore is not None}, <key redacted>)"

    def __reduce__(self) -> Any:
        raise TypeError("Sealer holds key material and is never pickled; build it again with Sealer.for_embedding")

    @classmethod
    def for_embedding(cls, embedding: Any) -> Sealer:
        """The sealer of a sealed PrivateEmbedding's store (call it once the function is bound to
        its store: created or reopened with it, or a document added).

        Raises:
            InvalidParameterError: naming ``embedding``, for a function that does not seal.
            SealedStoreError: no key, no keyring where the store keeps one, a wrap that does not open.
        """
        pipeline = getattr(embedding, "pipeline", None)
        binding = getattr(pipeline, "seal", None)
        if pipeline is None or binding is None or not binding.sealed:
            raise InvalidParameterError("embedding", "a PrivateEmbedding of a sealed store (a key, seal=None or "
                                        "seal=True)", Described(f"<{type(embedding).__name__} that does not seal>"))
        return binding.sealer(pipeline.keying, lambda dk, sealing, keystore: cls(dk, sealing, keystore=keystore))

    # -- names ---------------------------------------------------------------------------------
    def marker(self, text: Any) -> str:
        """The readable ``documents`` value: ``pv-sealed:`` + 26 base32 characters of a keyed HMAC of ``text``."""
        data = b"\x00none" if text is None else b"\x01" + str(text).encode("utf-8")
        return MARKER_PREFIX + _b32(hmac.digest(self._marker_key, data, "sha256"))

    def stored_id(self, doc_id: Any) -> str:
        """The id the store holds for ``doc_id``: itself (``ids="given"``) or ``pv-`` + a keyed HMAC."""
        doc_id = _doc_id(doc_id)
        if self.sealing.ids == "given":
            return doc_id
        return _ID_PREFIX + _b32(hmac.digest(self._id_key, doc_id.encode("utf-8"), "sha256"))

    def _aad(self, stored_id: str) -> bytes:
        """The label and the sorted, compact, ASCII JSON of {store, id, field, v} (built by hand:
        the bytes of ``json.dumps(..., sort_keys=True)``, a few microseconds less per record)."""
        return (self._aad_head + json.encoder.encode_basestring_ascii(stored_id).encode("ascii")  # type: ignore[attr-defined]
                + self._aad_tail)

    def _nonce(self, aad: bytes) -> bytes:
        return hmac.digest(self._nonce_key, aad, "sha256")[:12]

    # -- document keys -------------------------------------------------------------------------
    def _ring_name(self, stored_id: str) -> str:
        return "k" + keyed_name(self._ring_name_key, self.store, stored_id)[:40]

    def _doc_keys(self, stored_ids: Sequence[str], *, create: bool) -> list[bytes | None]:
        """Each document's record key (None: a keyring that holds no key for it)."""
        if self._keystore is None:
            return [self._dk.subkey("record", s.encode("utf-8")) for s in stored_ids]
        names = [self._ring_name(s) for s in stored_ids]
        got = [self._ring_open(n, self._keystore.get(n)) for n in names]
        if create and any(g is None for g in got):
            new = {n: self._ring_seal(n, secrets.token_bytes(32)) for n, g in zip(names, got, strict=True) if g is None}
            put_many = getattr(self._keystore, "put_many", None)
            if callable(put_many):
                put_many(new)
            else:
                for n, v in new.items():
                    self._keystore.put(n, v)
            got = [g if g is not None else self._ring_open(n, self._keystore.get(n)) for n, g in zip(names, got, strict=True)]
        return got

    def _ring_seal(self, name: str, key: bytes) -> bytes:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

        return AESGCMSIV(self._ring_wrap_key).encrypt(self._nonce(name.encode("ascii")), key, name.encode("ascii"))

    def _ring_open(self, name: str, value: bytes | None) -> bytes | None:
        if value is None:
            return None
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

        try:
            return AESGCMSIV(self._ring_wrap_key).decrypt(self._nonce(name.encode("ascii")), bytes(value),
                                                          name.encode("ascii"))
        except (InvalidTag, ValueError):
            pass
        raise SealedStoreError("keyring: a document key in the keyring does not open under this store's data key "
                               "(the keyring of another store, or edited)")

    def forget(self, doc_ids: Sequence[Any]) -> int:
        """Destroy the keyring keys of ``doc_ids`` (the user's ids); returns how many were held.
        Without a keyring nothing is held apart (0): deleting the records is all there is."""
        stored = [self.stored_id(d) for d in doc_ids]
        self.caches.discard(stored)
        if self._keystore is None:
            return 0
        names = [self._ring_name(s) for s in stored]
        held = [n for n in names if self._keystore.get(n) is not None]
        destroy_many = getattr(self._keystore, "destroy_many", None)
        if callable(destroy_many):
            destroy_many(held)
        else:
            for n in held:
                self._keystore.destroy(n)
        return len(held)

    # -- sealing -------------------------------------------------------------------------------
    def _plaintext(self, doc_id: str, text: Any, metadata: Any, vector: Any, restore: Any, refs: Any) -> bytes:
        if text is not None and not isinstance(text, str):
            raise InvalidTypeError("text", "a str or None", Described(f"<{type(text).__name__}>"))
        if restore is not None and not isinstance(restore, str):
            raise InvalidTypeError("restore", "a restore record string or None", Described(f"<{type(restore).__name__}>"))
        refs = [str(r) for r in (refs or ())]
        body = json.dumps({"id": doc_id, "text": text, "meta": _check_metadata(metadata), "restore": restore,
                           "refs": refs}, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        code, dtype = _DTYPES[self.sealing.vector]
        vec = b"" if vector is None else _check_vector(vector).astype(dtype).tobytes()  # None: no vector kept
        payload = _HEADER.pack(_FORMAT, len(body), code, len(vec) // dtype.itemsize) + body + vec
        size = size_class(len(payload) + 4)
        return struct.pack(">I", len(payload)) + payload + b"\x00" * (size - 4 - len(payload))

    def seal(self, doc_id: Any, *, text: str | None, metadata: Mapping[str, Any] | None, vector: Any,
             restore: str | None = None, index_refs: Sequence[str] = ()) -> str:
        """The record of document ``doc_id`` (the user's id; bound to :meth:`stored_id` of it)."""
        return self.seal_many([doc_id], texts=[text], metadatas=[metadata], vectors=[vector], restores=[restore],
                              index_refs=[index_refs])[0]

    def seal_many(self, doc_ids: Sequence[Any], *, texts: Sequence[str | None],
                  metadatas: Sequence[Mapping[str, Any] | None] | None, vectors: Any,
                  restores: Sequence[str | None] | None = None,
                  index_refs: Sequence[Sequence[str]] | None = None) -> list[str]:
        """One record per document (a keyring gets every new key in one write)."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

        ids = [_doc_id(d) for d in doc_ids]
        n = len(ids)
        metas = list(metadatas) if metadatas is not None else [None] * n
        rest = list(restores) if restores is not None else [None] * n
        refs = list(index_refs) if index_refs is not None else [()] * n
        vecs = list(vectors) if not isinstance(vectors, np.ndarray) else list(np.atleast_2d(vectors))
        for name, seq in (("texts", texts), ("metadatas", metas), ("vectors", vecs), ("restores", rest),
                          ("index_refs", refs)):
            if len(seq) != n:
                raise InvalidParameterError(name, f"{n} entries (one per document)", Described(f"{len(seq)} entries"))
        stored = [self.stored_id(d) for d in ids]
        self.caches.discard(stored)  # a write replaces these documents' vectors
        keys = self._doc_keys(stored, create=True)
        out = []
        for i in range(n):
            aad = self._aad(stored[i])
            plain = self._plaintext(ids[i], texts[i], metas[i], vecs[i], rest[i], refs[i])
            sealed = AESGCMSIV(keys[i]).encrypt(self._nonce(aad), plain, aad)  # type: ignore[arg-type]
            out.append(RECORD_PREFIX + base64.urlsafe_b64encode(sealed).decode("ascii").rstrip("="))
        return out

    # -- opening -------------------------------------------------------------------------------
    def open(self, stored_id: Any, record: Any) -> SealedPayload:
        """The payload of the record the store holds under ``stored_id``.

        Raises:
            SealedRecordError: not a record, another key, an edited byte, another document's or
                another store's record, or a destroyed document key (nothing is returned).
        """
        return self.open_many([stored_id], [record])[0]

    def open_many(self, stored_ids: Sequence[Any], records: Sequence[Any]) -> list[SealedPayload]:
        """:meth:`open` for each (id, record) pair; one keyring read per document."""
        opened = self.open_records(stored_ids, records)
        return [opened.payload(j) for j in range(len(opened))]

    def open_records(self, stored_ids: Sequence[Any], records: Sequence[Any]) -> OpenedRecords:
        """Authenticate and decrypt every (id, record) pair, parsing nothing yet: the key holder's
        re-rank reads :attr:`OpenedRecords.vectors` of all K candidates and
        :meth:`OpenedRecords.payload` of the few it returns. Raises as :meth:`open`, for any pair."""
        ids = [_doc_id(s, "stored_id") for s in stored_ids]
        if len(records) != len(ids):
            raise InvalidParameterError("records", f"{len(ids)} records (one per id)", Described(f"{len(records)} records"))
        from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

        keys = self._doc_keys(ids, create=False)
        plains = [self._decrypt(i, sid, rec, key, AESGCMSIV) for i, (sid, rec, key) in
                  enumerate(zip(ids, records, keys, strict=True))]
        return OpenedRecords(self, ids, plains)

    def _decrypt(self, position: int, stored_id: str, record: Any, key: bytes | None, cipher: Any) -> bytes:
        from cryptography.exceptions import InvalidTag

        where = f"the record at position {position}"
        if not is_record(record):
            raise SealedRecordError(f"{where} is not a sealed record of this library (missing or another format)")
        if key is None:
            raise SealedRecordError(f"{where}: its document key is not in the keyring (the document was deleted: "
                                    "its key was destroyed, or the keyring is another one)")
        try:  # base64url, padding optional (what urlsafe_b64decode reads, without its copies)
            sealed = binascii.a2b_base64(record.encode("ascii")[len(RECORD_PREFIX):].translate(_URLSAFE) + b"==")
        except (ValueError, UnicodeEncodeError):
            sealed = b""
        aad = self._aad(stored_id)
        plain = None
        if len(sealed) >= _MIN_CLASS + _TAG:
            try:
                plain = cipher(key).decrypt(self._nonce(aad), sealed, aad)
            except (InvalidTag, ValueError):
                plain = None
        if plain is None:
            raise SealedRecordError(f"{where} does not open: another key, an edited record, or the record of another "
                                    "document or store; nothing of it was read")
        return plain

    def _parse(self, plain: bytes, stored_id: str, where: str) -> SealedPayload:
        fmt, jlen, code, dim, start = _layout(plain, where)
        body = json.loads(plain[start:start + jlen].decode("utf-8"))
        dtype = _BY_CODE[code]
        vec = np.frombuffer(plain, dtype=dtype, count=dim, offset=start + jlen)
        if self.stored_id(body["id"]) != stored_id:  # pragma: no cover - bound by the associated data
            raise SealedRecordError(f"{where}: its id does not match the store's")
        return SealedPayload(doc_id=str(body["id"]), text=body["text"], metadata=dict(body["meta"]),
                             vector=vec.astype(np.float32), restore=body["restore"],
                             index_refs=tuple(body["refs"]))


def _layout(plain: bytes, where: str) -> tuple[int, int, int, int, int]:
    """(format, JSON length, vector dtype code, dimension, offset of the JSON) of a plaintext."""
    fmt, jlen, code, dim = _HEADER.unpack_from(plain, 4)
    if fmt != _FORMAT or code not in _BY_CODE:  # pragma: no cover - authenticated plaintext
        raise SealedRecordError(f"{where}: a record format this version does not read ({fmt}); upgrade")
    return fmt, jlen, code, dim, 4 + _HEADER.size


class OpenedRecords:
    """Records authenticated and decrypted, read on demand (:meth:`Sealer.open_records`); they
    hold documents' text: keep them in memory only. Repr redacted, never pickled."""

    def __init__(self, sealer: Sealer, stored_ids: list[str], plains: list[bytes]) -> None:
        self._sealer, self._ids, self._plains = sealer, stored_ids, plains

    def __len__(self) -> int:
        return len(self._plains)

    def __repr__(self) -> str:
        return f"OpenedRecords(<{len(self)} records>)"

    def __reduce__(self) -> Any:
        raise TypeError("OpenedRecords holds documents' text and is never pickled")

    @property
    def vectors(self) -> np.ndarray:
        """The exact vectors, (m, dim) float32, read at their offset (no JSON parsed).

        Raises:
            SealedRecordError: the records hold vectors of different sizes (or none).
        """
        return self.raw_vectors().astype(np.float32)

    def raw_vectors(self) -> np.ndarray:
        """The exact vectors as the records hold them, (m, dim) in their dtype (float16 or
        float32), read-only: what the key holder's cache keeps. Raises as :attr:`vectors`."""
        if not self._plains:
            return np.zeros((0, 0), dtype=np.float32)
        parts, dims, dtypes = [], set(), set()
        for j, plain in enumerate(self._plains):
            _, jlen, code, dim, start = _layout(plain, f"the record at position {j}")
            dtype = _BY_CODE[code]
            parts.append(plain[start + jlen:start + jlen + dim * dtype.itemsize])
            dims.add(dim)
            dtypes.add(dtype)
        if len(dims) != 1 or len(dtypes) != 1 or 0 in dims:
            raise SealedRecordError("these records do not all hold an exact vector of one size (records sealed "
                                    "without a vector, or by another encoder)")
        return np.frombuffer(b"".join(parts), dtype=dtypes.pop()).reshape(len(parts), dims.pop())

    def payload(self, j: int) -> SealedPayload:
        """The parsed payload of the ``j``-th record."""
        return self._sealer._parse(self._plains[j], self._ids[j], f"the record at position {j}")
