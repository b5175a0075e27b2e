"""The :class:`Restorer`: seals and opens the restore records of one collection (AES-256-GCM under
the key's restore subkey, bound to the collection's salt, the document's id and the configuration;
the plaintext padded to a power-of-two size class)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import Described, InvalidParameterError, InvalidTypeError
from ..keys import SecretBytes, SecretKey, canonical_context, hkdf_sha256, make_key_hint
from .documents import _answer_forms, _as_list, _parts, _with_text
from .records import (
    RESTORE_KEY,
    Replacement,
    RestoreData,
    RestoreError,
    _doc_id,
    _record_entries,
    config_digest,
    paired_ids,
)

RECORD_PREFIX = "pvr1."
_AAD_LABEL = b"private_vectors/restore/v1\x00"
_MIN_BUCKET = 256
_NONCE_BYTES = 12
_PLAINTEXT_VERSION = 1
_PLACEHOLDER = re.compile(r"^<[A-Z][A-Z0-9_]*>$")


def _pad(payload: bytes) -> bytes:
    """4-byte length ‖ payload ‖ zeros, to the next power of two of at least 256 bytes."""
    size = max(_MIN_BUCKET, 1 << (len(payload) + 3).bit_length())
    return struct.pack(">I", len(payload)) + payload + b"\x00" * (size - 4 - len(payload))


def _unpad(padded: bytes) -> bytes:
    (n,) = struct.unpack(">I", padded[:4])
    if n > len(padded) - 4:  # pragma: no cover - authenticated plaintext
        raise RestoreError("restore record: bad padding")
    return padded[4:4 + n]


def _decode(doc_id: str, record: Any) -> bytes:
    if not isinstance(record, str) or not record.startswith(RECORD_PREFIX):
        raise RestoreError(f"document {doc_id!r}: its {RESTORE_KEY} value is not a restore record of this library")
    try:
        sealed = base64.urlsafe_b64decode(record[len(RECORD_PREFIX):].encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        sealed = b""
    if len(sealed) < _NONCE_BYTES + 16 + _MIN_BUCKET:
        raise RestoreError(f"document {doc_id!r}: its restore record is truncated or not base64; nothing was restored")
    return sealed


class Restorer:
    """Seals and opens restore records for one collection (or one keyed Sanitizer).

    Build it with :meth:`for_embedding` (a keyed PrivateEmbedding bound to its store) or
    :meth:`for_sanitizer` (a keyed Sanitizer used on its own). The AES key lives only inside
    the ``cryptography`` AEAD object; the repr shows none of it.

    Args:
        key: the user's secret (a :class:`~private_vectors.keys.SecretKey`, str or bytes).
        salt: the collection's public salt (its key derivation salt).
        context: the configuration digest (:func:`config_digest`).
        derivation: ``"v2"`` (stretched key) or ``"v1"`` (collections written before).
        scrypt: the collection's scrypt cost (default: the library's).
    """

    def __init__(self, key: Any, *, salt: bytes, context: str, derivation: str = "v2",
                 scrypt: Mapping[str, int] | None = None) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:  # first, so that no later error leaves the raw key in this frame's locals
            secret = SecretKey.resolve(key)
        finally:
            del key
        if secret is None:
            raise InvalidParameterError("key", "the secret the documents were written with", None,
                                        note=make_key_hint())
        if not isinstance(salt, (bytes, bytearray)) or len(salt) < 8:
            raise InvalidParameterError("salt", "the collection's salt (at least 8 bytes)", salt)
        if not isinstance(context, str) or not context:
            raise InvalidTypeError("context", "a configuration digest (str, see config_digest)", context)
        sched = secret.schedule(derivation, bytes(salt), dict(scrypt) if scrypt is not None else None)
        self._aead = AESGCM(bytes(sched.restore))
        # a synthetic nonce (SIV construction): HMAC of the associated data and the plaintext, so a
        # document sealed again (a retried Ray task, a re-sealed store) gives the same record bytes
        self._nonce_key = SecretBytes(hkdf_sha256(bytes(sched.restore), salt=b"private_vectors/restore",
                                                  info=b"nonce/v1"))
        self.salt = bytes(salt)
        self.context = context
        self.derivation = derivation

    def __repr__(self) -> str:
        if not hasattr(self, "context"):  # a half-built object (a traceback with locals shows it)
            return "Restorer(<not constructed>)"
        return f"Restorer(derivation={self.derivation!r}, context={self.context[:12]}…, <key redacted>)"

    def __reduce__(self) -> Any:
        raise TypeError("Restorer: key material is never pickled; build it again with the key")

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def for_embedding(cls, embedding: Any) -> Restorer:
        """The restorer of a keyed PrivateEmbedding's collection (its salt, derivation and config).

        Call it after the embedding was bound to its store (a store opened or created with it, or
        documents added): the salt is then the collection's.

        Raises:
            InvalidParameterError: the embedding has no keyed text stage.
        """
        sanitizer = getattr(embedding, "sanitizer", None)
        secret = getattr(sanitizer, "secret", None)
        if sanitizer is None or secret is None:
            raise InvalidParameterError(
                "embedding", "a PrivateEmbedding with a keyed text stage (sanitize='surrogate' or 'redact' with "
                "key=...)", embedding, note="without a key there is nothing only you can restore")
        keying = getattr(getattr(embedding, "pipeline", None), "keying", None)
        if getattr(keying, "keyed", False):  # fix the salt as embedding a document would (the context-derived
            keying.schedule()                # default, unless a store recorded the config with its own first)
        cfg = embedding.get_config()
        version = str(cfg.get("key_derivation", "v1"))
        if version == "v2":
            salt, scrypt = bytes.fromhex(str(cfg["key_salt"])), cfg.get("key_scrypt")
        else:  # v1 collections have no salt: the key check value stands in for it in the binding
            salt, scrypt = str(cfg.get("key_id", "v1-collection")).encode().ljust(8, b"\x00"), None
        return cls(secret, salt=salt, context=config_digest(cfg), derivation=version, scrypt=scrypt)

    @classmethod
    def for_sanitizer(cls, sanitizer: Any) -> Restorer:
        """The restorer of a keyed Sanitizer used without a store (its public domain salt)."""
        from ..text.sanitizer import SANITIZER_SALT

        secret = getattr(sanitizer, "secret", None)
        if secret is None:
            raise InvalidParameterError("sanitizer", "a Sanitizer made with key=...", sanitizer,
                                        note="without a key there is nothing only you can restore")
        return cls(secret, salt=SANITIZER_SALT, context=config_digest(sanitizer.get_config()))

    # -- sealing -------------------------------------------------------------------------------
    def _aad(self, doc_id: str) -> bytes:
        return _AAD_LABEL + canonical_context({"salt": self.salt.hex(), "id": doc_id, "config": self.context})

    def seal(self, doc_id: Any, stored: str, replacements: Iterable[Replacement]) -> str:
        """The restore record (a JSON-safe string) of document ``doc_id`` whose stored text is ``stored``."""
        doc_id = _doc_id(doc_id)
        body = {"v": _PLAINTEXT_VERSION, "t": hashlib.sha256(stored.encode("utf-8")).hexdigest(),
                "r": [[r.start, r.end, r.label, r.written, r.original] for r in replacements]}
        padded = _pad(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        aad = self._aad(doc_id)
        nonce = hmac.digest(self._nonce_key, struct.pack(">I", len(aad)) + aad + padded, "sha256")[:_NONCE_BYTES]
        sealed = nonce + self._aead.encrypt(nonce, padded, aad)
        return RECORD_PREFIX + base64.urlsafe_b64encode(sealed).decode("ascii")

    def sanitize(self, texts: Sequence[str], ids: Sequence[Any], sanitizer: Any) -> tuple[list[str], list[str]]:
        """Sanitize ``texts`` with ``sanitizer`` and seal each one's restore record (by ``ids``)."""
        items = list(texts)
        ids = paired_ids(ids, items)
        out, logs = sanitizer.apply_recorded(items)
        return out, [self.seal(i, o, _record_entries(t, o, log)) for i, t, o, log in zip(ids, items, out, logs,
                                                                                          strict=True)]

    # -- opening -------------------------------------------------------------------------------
    def open(self, doc_id: Any, record: Any) -> RestoreData:
        """Decrypt and check the restore record of ``doc_id``.

        Raises:
            RestoreError: a malformed record; or one that fails authentication: another key, an
                edited record, or the record of another document or collection.
        """
        from cryptography.exceptions import InvalidTag

        doc_id = _doc_id(doc_id)
        sealed = _decode(doc_id, record)
        try:
            padded = self._aead.decrypt(sealed[:_NONCE_BYTES], sealed[_NONCE_BYTES:], self._aad(doc_id))
        except InvalidTag:
            raise RestoreError(
                f"document {doc_id!r}: its restore record does not open: another key, an edited record, or the "
                "record of another document or collection; nothing was restored") from None
        body = json.loads(_unpad(padded).decode("utf-8"))
        reps = tuple(Replacement(int(s), int(e), str(lab), str(w), str(o)) for s, e, lab, w, o in body["r"])
        return RestoreData(doc_id, str(body["t"]), reps)

    def restore_text(self, doc_id: Any, text: str, record: Any) -> str:
        """The original of stored document ``doc_id`` (its ``text`` and restore ``record``)."""
        return self.open(doc_id, record).apply(text)

    def restore_documents(self, documents: Sequence[Any], *, missing: str = "raise") -> list[Any]:
        """Restored copies of retrieved documents (LangChain Documents, LlamaIndex nodes or
        ``NodeWithScore``, or ``(id, text, record)`` tuples); the record is dropped from the copies.

        Args:
            documents: as retrieved from a store that kept restore records.
            missing: a document without a record: ``"raise"`` (default) or ``"keep"`` (returned as is).

        Raises:
            RestoreError: a record that does not open or does not fit its document, or (with
                ``missing="raise"``) a document without a record or id.
        """
        if missing not in ("raise", "keep"):
            raise InvalidParameterError("missing", "'raise' or 'keep'", missing)
        return [self._restore_one(d, missing) for d in _as_list(documents)]

    def _restore_one(self, doc: Any, missing: str) -> Any:
        doc_id, text, record = _parts(doc)
        if record is None or doc_id is None:
            if missing == "keep":
                return doc
            raise RestoreError(f"document {doc_id!r} has no {'restore record' if record is None else 'id'}; "
                               "it was not written by a keyed text stage of this library (missing='keep' returns "
                               "such documents unchanged)")
        return _with_text(doc, self.open(doc_id, record).apply(text))

    def open_documents(self, documents: Sequence[Any]) -> list[tuple[RestoreData, str]]:
        """(opened record, stored text) of each document that carries a record (others skipped)."""
        out = []
        for d in _as_list(documents):
            doc_id, text, record = _parts(d)
            if record is not None and doc_id is not None:
                data = self.open(doc_id, record)
                data.apply(text)  # the text must be the recorded one
                out.append((data, text))
        return out

    def restore_answer(self, answer: str, documents: Sequence[Any]) -> str:
        """``answer`` (an LLM's text built from ``documents``) with their surrogates replaced by the originals.

        The rule (an answer has no offsets):

        1. every value a record of ``documents`` wrote (surrogate or placeholder) is a **form**
           mapped to its original; for a PERSON whose surrogate has as many name words as the
           original, each surrogate word is a form too (surrogates are chosen word by word, so
           "Brandt" is the surname-alone form of "Saanvi Brandt"), titles and initials excepted;
        2. a form is used only if it maps to **one** original over all the documents and never
           occurs in their stored text outside a replaced span (there it is an ordinary word);
           a placeholder written for two different values (``<PERSON>`` twice) is thus left as is;
        3. forms are matched whole-word, longest first: a value of several words (or an e-mail, a
           number) in any case ("SAANVI BRANDT"); a single word only as written or in capitals
           ("Brandt", "BRANDT", never "brandt"); what follows the form stays, so a possessive is
           kept ("Brandt's" -> "Okafor's").

        Inflections that change the word itself ("Brandts", "Brandt-like" aside from the
        possessive) and misspellings are not restored; they stay as surrogates, never wrong names.

        Raises:
            RestoreError: as :meth:`restore_documents` for any document carrying a record.
        """
        if not isinstance(answer, str):
            raise InvalidTypeError("answer", "the model's answer (str)", Described(f"<{type(answer).__name__}>"))
        forms = _answer_forms(self.open_documents(documents))
        if not forms:
            return answer
        pattern = "|".join(
            (f"(?i:{re.escape(f)})" if any_case else re.escape(f))
            for f, (_, any_case) in sorted(forms.items(), key=lambda kv: (-len(kv[0]), kv[0])))
        rx = re.compile(rf"(?<!\w)(?:{pattern})(?!\w)")
        exact = {f: orig for f, (orig, any_case) in forms.items() if not any_case}
        folded = {f.casefold(): orig for f, (orig, any_case) in forms.items() if any_case}

        def sub(m: re.Match[str]) -> str:
            got = m.group(0)
            orig = exact.get(got) or folded.get(got.casefold()) or got
            return orig.upper() if got.isupper() and len(got) > 1 and not _PLACEHOLDER.match(got) else orig

        return rx.sub(sub, answer)

