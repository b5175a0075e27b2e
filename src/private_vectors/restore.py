"""Encrypted restore data: the key holder gets the real values back; nobody else does.

A keyed text stage writes surrogates (``Saanvi Brandt``) or typed placeholders (``<PERSON>``)
into the stored documents. For each document, the values it replaced are sealed into a
**restore record** stored beside the document (Chroma metadata ``pv_restore``, a FAISS JSON
sidecar, LlamaIndex node metadata). There is no mapping table anywhere, in memory or on disk:

* the record is AES-256-GCM (NIST SP 800-38D) under a subkey of the user's key, derived from
  the stretched key with HKDF-SHA256 (RFC 5869) and its own label ``private_vectors/v2/restore``
  (:class:`private_vectors.keys.KeySchedule`), with a random 96-bit nonce per record;
* its associated data binds it to the collection's salt, the document's id and a digest of
  the configuration (:func:`config_digest`): a record copied onto another document, or into
  another collection, fails authentication;
* its plaintext (the replaced spans: offsets in the stored text, label, value written,
  original value, and the SHA-256 of the stored text) is padded to a power-of-two size class
  of at least 256 bytes, so its length says little more than "few" or "many" replacements.

:func:`restore` (and :meth:`Restorer.restore_documents`) puts the originals back **at the
recorded offsets** of each document, after checking that the document's text is the one the
record was made for; it never does a global string replace. A wrong key, an edited record, a
record of another document or collection, or an edited document raise :class:`RestoreError`;
nothing is ever half-restored.

:meth:`Restorer.restore_answer` restores an LLM answer built from retrieved documents. An
answer has no offsets, so its rule is string-based and conservative (see its docstring).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
import secrets
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._progress import counts_documents
from .errors import Described, InvalidParameterError, InvalidTypeError, PrivateVectorsError
from .keys import SecretKey, canonical_context, make_key_hint

__all__ = [
    "RESTORE_KEY",
    "RESTORE_NOTE",
    "Replacement",
    "RestoreData",
    "RestoreError",
    "Restorer",
    "config_digest",
    "prepare_with_restore",
    "restore",
    "restore_answer",
    "restorer_for",
    "sanitize_recorded",
    "seal_records",
    "wants_restore",
    "with_records",
]

RESTORE_KEY = "pv_restore"
"""Metadata key of a document's restore record (Chroma metadata, LlamaIndex node metadata)."""
RESTORE_NOTE = ("a keyed text stage stores, per document, an encrypted restore record (AES-256-GCM under a "
                "subkey of the key): without the key it shows only a size class (256, 512, 1024… bytes) and "
                "nothing the stored surrogate text does not already show; with the key it gives back every "
                "replaced value")
"""One line for privacy reports: what the restore records reveal without the key, and with it."""
RECORD_PREFIX = "pvr1."
_AAD_LABEL = b"private_vectors/restore/v1\x00"
_MIN_BUCKET = 256
_NONCE_BYTES = 12
_PLAINTEXT_VERSION = 1
ESCAPE_LABEL = "ESCAPE"
"""Label of a restore entry that undoes the text stage's escaping of input that looked like a
placeholder (``<PERSON>`` in the input is stored as ``‹PERSON›``); never used in answers."""
_PLACEHOLDER_LIKE = re.compile(r"<([A-Z][A-Z0-9_]*)>")
_PLACEHOLDER = re.compile(r"^<[A-Z][A-Z0-9_]*>$")
_ONE_WORD = re.compile(r"^[^\W\d_]+(?:['’]s)?$")


class RestoreError(PrivateVectorsError, ValueError):
    """A restore record cannot be opened or does not fit its document; nothing was restored."""


@dataclass(frozen=True, repr=False)
class Replacement:
    """One replaced span of a stored document.

    Attributes:
        start: offset of the written value in the stored text.
        end: end offset of the written value in the stored text.
        label: the span's label (``PERSON``, ``EMAIL_ADDRESS``…; ``ESCAPE`` for escaped input).
        written: the surrogate or placeholder the stored text holds there.
        original: the value it replaced (a secret: never in a repr).
    """

    start: int
    end: int
    label: str
    written: str
    original: str

    def __repr__(self) -> str:
        return f"Replacement({self.start}, {self.end}, {self.label!r}, written={self.written!r}, original=<hidden>)"


@dataclass(frozen=True, repr=False)
class RestoreData:
    """The opened restore record of one document (holds original values: keep it in memory only)."""

    doc_id: str
    text_sha256: str
    replacements: tuple[Replacement, ...] = field(default_factory=tuple)

    def __repr__(self) -> str:
        return f"RestoreData(doc_id={self.doc_id!r}, replacements={len(self.replacements)}, <originals hidden>)"

    def __reduce__(self) -> Any:
        raise TypeError("RestoreData holds original values and is never pickled")

    def apply(self, text: str) -> str:
        """``text`` (the stored document) with every recorded replacement undone at its offsets.

        Raises:
            RestoreError: ``text`` is not the text the record was made for.
        """
        if not isinstance(text, str):
            raise InvalidTypeError("text", "the stored document text (str)", Described(f"<{type(text).__name__}>"))
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != self.text_sha256:
            raise RestoreError(f"document {self.doc_id!r}: its text is not the text its restore record was made for "
                               "(edited, truncated or another document's); nothing was restored")
        out, pos = [], 0
        for r in sorted(self.replacements, key=lambda r: r.start):
            if r.start < pos or text[r.start:r.end] != r.written:  # pragma: no cover - guarded by the digest
                raise RestoreError(f"document {self.doc_id!r}: a recorded span does not match its text")
            out += [text[pos:r.start], r.original]
            pos = r.end
        out.append(text[pos:])
        return "".join(out)


def _record_entries(raw: str, stored: str, log: Sequence[tuple[int, int, str, str]]) -> list[Replacement]:
    """Replacements in stored-text offsets from the Sanitizer's log (input offsets), plus an
    ``ESCAPE`` entry per bracket of placeholder-like input the text stage escaped (``<`` stored
    as ``‹``) outside a replaced span."""
    spans = sorted(log)
    events = [(s, e, label, written, raw[s:e]) for s, e, label, written in spans]
    for m in _PLACEHOLDER_LIKE.finditer(raw):  # "<" and ">" were stored as "‹" and "›"
        for at, was, now in ((m.start(), "<", "‹"), (m.end() - 1, ">", "›")):
            if not any(s <= at < e for s, e, *_ in spans):
                events.append((at, at + 1, ESCAPE_LABEL, now, was))
    out, shift = [], 0
    for s, e, label, written, original in sorted(events):
        start = s + shift
        out.append(Replacement(start, start + len(written), label, written, original))
        shift += len(written) - (e - s)
    if any(stored[r.start:r.end] != r.written for r in out):
        raise RestoreError("the text stage's output does not match its recorded replacements; no restore "
                           "data was made (nothing was stored)")
    return out


def _pad(payload: bytes) -> bytes:
    """4-byte length ‖ payload ‖ zeros, to the next power of two of at least 256 bytes."""
    size = _MIN_BUCKET
    while size < len(payload) + 4:
        size *= 2
    return struct.pack(">I", len(payload)) + payload + b"\x00" * (size - 4 - len(payload))


def _unpad(padded: bytes) -> bytes:
    (n,) = struct.unpack(">I", padded[:4])
    if n > len(padded) - 4:  # pragma: no cover - authenticated plaintext
        raise RestoreError("restore record: bad padding")
    return padded[4:4 + n]


def config_digest(config: Mapping[str, Any]) -> str:
    """The configuration digest a restore record is bound to: SHA-256 of the fields that decide
    what the stored text means (encoder model, key derivation and key check value, the text
    stage's policy and per-label operators). Fields a reopen may legitimately change (library
    version, timeouts, detectors) are left out, so a library upgrade keeps records valid."""
    if not isinstance(config, Mapping):
        raise InvalidTypeError("config", "a PrivateEmbedding or Sanitizer config (dict)", config)
    san = config.get("sanitizer") if config.get("type") != "sanitizer" else config
    san = san if isinstance(san, Mapping) else {}
    enc = config.get("encoder") if isinstance(config.get("encoder"), Mapping) else {}
    view = {
        "model_id": enc.get("model_id"),
        "key_derivation": config.get("key_derivation"),
        "key_check": config.get("key_check", config.get("key_id")),
        "policy": san.get("policy"),
        "operators": dict(san.get("operators") or {}),
    }
    return hashlib.sha256(canonical_context(view)).hexdigest()


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
        from .text.sanitizer import SANITIZER_SALT

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
        nonce = secrets.token_bytes(_NONCE_BYTES)
        sealed = nonce + self._aead.encrypt(nonce, padded, self._aad(doc_id))
        return RECORD_PREFIX + base64.urlsafe_b64encode(sealed).decode("ascii")

    def sanitize(self, texts: Sequence[str], ids: Sequence[Any], sanitizer: Any) -> tuple[list[str], list[str]]:
        """Sanitize ``texts`` with ``sanitizer`` and seal each one's restore record (by ``ids``)."""
        items = list(texts)
        ids = list(ids)
        if len(ids) != len(items):
            raise InvalidParameterError("ids", f"{len(items)} ids (one per document)", Described(f"{len(ids)} ids"))
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


def _answer_forms(opened: list[tuple[RestoreData, str]]) -> dict[str, tuple[str, bool]]:
    """form -> (original, matched in any case?) under the rule of :meth:`Restorer.restore_answer`."""
    whole: dict[str, set[str]] = {}
    words: dict[str, set[str]] = {}
    shown: dict[str, str] = {}
    for data, _ in opened:
        for r in data.replacements:
            if r.label == ESCAPE_LABEL or not r.written.strip():
                continue
            key = " ".join(r.written.casefold().split())
            shown.setdefault(key, r.written)
            whole.setdefault(key, set()).add(" ".join(r.original.split()))
            if r.label == "PERSON":
                for w, o in _name_word_pairs(r.written, r.original):
                    words.setdefault(w, set()).add(o)
    outside = " \n ".join(_outside_text(data, text) for data, text in opened)
    forms: dict[str, tuple[str, bool]] = {}
    for key, originals in whole.items():
        if len({o.casefold() for o in originals}) == 1 and not _occurs(shown[key], outside, any_case=True):
            value, original = shown[key], next(iter(originals))
            if _ONE_WORD.match(value):  # "Aalborg": as written or in capitals, never as an ordinary word
                forms[value] = forms[value.upper()] = (original, False)
            else:  # several words, an e-mail, a number: in any case
                forms[value] = (original, True)
    for w, originals in words.items():
        if len(originals) == 1 and w.casefold() not in {f.casefold() for f in forms} and not _occurs(w, outside):
            forms[w] = (next(iter(originals)), False)
    return forms


def _name_word_pairs(written: str, original: str) -> list[tuple[str, str]]:
    from .text.surrogates import NAME_TOKEN, TITLES

    def words(text: str) -> list[str]:
        toks = [re.sub(r"['’]s$", "", m.group(0)) for m in NAME_TOKEN.finditer(text)]
        return [t for t in toks if t.casefold().rstrip(".") not in TITLES]

    a, b = words(written), words(original)
    if len(a) != len(b) or (len(a) == 1 and a[0] == written):  # one bare word: the whole value is the form
        return []
    return [(w, o) for w, o in zip(a, b, strict=True) if len(w) > 1 and len(o) > 1]


def _outside_text(data: RestoreData, text: str) -> str:
    """The stored text with every replaced span blanked (what the documents say in clear)."""
    out, pos = [], 0
    for r in sorted(data.replacements, key=lambda r: r.start):
        out += [text[pos:r.start], " "]
        pos = r.end
    out.append(text[pos:])
    return "".join(out)


def _occurs(form: str, text: str, *, any_case: bool = False) -> bool:
    return re.search(rf"(?<!\w){re.escape(form)}(?!\w)", text, re.IGNORECASE if any_case else 0) is not None


# -- document shapes ---------------------------------------------------------------------------
def _doc_id(doc_id: Any) -> str:
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or doc_id == "":
        raise InvalidTypeError("doc_id", "the document's id in its store (a non-empty str or an int)", doc_id)
    return str(doc_id)


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


def _as_list(documents: Any) -> list[Any]:
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Iterable):
        raise InvalidTypeError("documents", "a list of retrieved documents", documents)
    return list(documents)


def _parts(doc: Any) -> tuple[str | None, str, Any]:
    """(id, stored text, record) of a LangChain Document, a LlamaIndex node or an (id, text, record) tuple."""
    if isinstance(doc, tuple) and len(doc) == 3:
        return (None if doc[0] is None else _doc_id(doc[0])), doc[1], doc[2]
    node = getattr(doc, "node", None)
    if node is not None and hasattr(node, "metadata"):  # a LlamaIndex NodeWithScore
        doc = node
    meta = getattr(doc, "metadata", None) or {}
    if hasattr(doc, "page_content"):  # LangChain
        doc_id = getattr(doc, "id", None) or meta.get("id")
        text = doc.page_content
    elif hasattr(doc, "node_id") and hasattr(doc, "text"):  # LlamaIndex TextNode
        doc_id, text = doc.node_id, doc.text
    elif hasattr(doc, "id") and isinstance(getattr(doc, "text", None), str):  # e.g. a FAISS StoredDocument
        doc_id, text = doc.id, doc.text
    else:
        raise InvalidTypeError("documents[i]", "a LangChain Document, a LlamaIndex node, a StoredDocument or an "
                               "(id, text, record) tuple", Described(f"<{type(doc).__name__}>"))
    return (None if doc_id is None else _doc_id(doc_id)), text, meta.get(RESTORE_KEY)


def _with_text(doc: Any, text: str) -> Any:
    """A copy of ``doc`` with ``text`` and without its restore record."""
    if isinstance(doc, tuple):
        return (doc[0], text, None)
    holder = getattr(doc, "node", None)
    if holder is not None and hasattr(holder, "metadata"):  # NodeWithScore
        return doc.model_copy(update={"node": _with_text(holder, text)})
    meta = {k: v for k, v in (doc.metadata or {}).items() if k != RESTORE_KEY}
    if dataclasses.is_dataclass(doc):
        return dataclasses.replace(doc, text=text, metadata=meta)
    if hasattr(doc, "page_content"):
        return doc.model_copy(update={"page_content": text, "metadata": meta})
    node = doc.model_copy(update={"metadata": meta})  # a LlamaIndex node (Document keeps its text in a resource)
    node.set_content(text)
    return node


# -- store paths --------------------------------------------------------------------------------
def wants_restore(embedding: Any, *, store_raw_text: bool = False) -> bool:
    """Whether a store path keeps restore records for ``embedding``: a keyed text stage whose
    sanitized text is what is stored (with ``store_raw_text`` the originals are stored anyway)."""
    sanitizer = getattr(embedding, "sanitizer", None)
    return (not store_raw_text and sanitizer is not None and getattr(sanitizer, "secret", None) is not None
            and callable(getattr(sanitizer, "apply_recorded", None)))


def sanitize_recorded(embedding: Any, texts: Sequence[str], *,
                      store_raw_text: bool = False) -> tuple[list[str], list[Any] | None]:
    """``embedding.sanitize_documents(texts)`` plus the text stage's replacement log per text
    (None when the store path keeps no restore records: see :func:`wants_restore`)."""
    if not wants_restore(embedding, store_raw_text=store_raw_text):
        return embedding.sanitize_documents(texts), None
    from ._validation import check_stage_output, check_texts

    items = check_texts(texts, "texts")
    if not items:
        return [], []
    out, logs = embedding.sanitizer.apply_recorded(items)
    return check_stage_output(out, items, "sanitizer.apply_recorded"), logs


def seal_records(embedding: Any, ids: Sequence[Any], texts: Sequence[str], sanitized: Sequence[str],
                 logs: Sequence[Any] | None) -> list[str] | None:
    """The restore record of each document (None when ``logs`` is None). Call it once the
    documents were embedded (the embedding's salt is then the collection's)."""
    if logs is None:
        return None
    ids, items = list(ids), list(texts)
    if len(ids) != len(items):
        raise InvalidParameterError("ids", f"{len(items)} ids (one per document)", Described(f"{len(ids)} ids"))
    restorer = Restorer.for_embedding(embedding)
    return [restorer.seal(i, o, _record_entries(t, o, log))
            for i, t, o, log in zip(ids, items, sanitized, logs, strict=True)]


@counts_documents("texts")
def prepare_with_restore(embedding: Any, texts: Sequence[str], ids: Sequence[Any], *,
                         store_raw_text: bool = False) -> tuple[list[str] | None, Any, list[str] | None]:
    """``embedding.prepare_documents`` plus each document's restore record.

    Each text is sanitized once; that text is embedded and stored, and its record is sealed
    under the collection's key (call it after the store recorded or checked the embedding's
    config, so the salt is the collection's). Without a keyed text stage, or with
    ``store_raw_text``, it is ``prepare_documents`` with ``None`` records.

    Returns:
        (texts to store or None, vectors, records or None)
    """
    from ._validation import check_texts

    items, ids = check_texts(texts, "texts"), list(ids)
    if len(ids) != len(items):
        raise InvalidParameterError("ids", f"{len(items)} ids (one per document)", Described(f"{len(ids)} ids"))
    if not wants_restore(embedding, store_raw_text=store_raw_text):
        stored, vectors = embedding.prepare_documents(items, store_raw_text=store_raw_text)
        return stored, vectors, None
    pipeline = embedding.pipeline
    sanitized, logs = sanitize_recorded(embedding, items)
    vectors = pipeline.embed_sanitized(sanitized, raw=items)  # fixes the salt when no store recorded one
    stored = pipeline.texts_to_store(items, sanitized, store_raw_text=False)
    return stored, vectors, seal_records(embedding, ids, items, sanitized, logs)


def with_records(metadatas: Sequence[Mapping[str, Any] | None] | None, records: Sequence[str] | None,
                 n: int) -> list[dict[str, Any] | None] | None:
    """Per-document metadata with the restore record under :data:`RESTORE_KEY` (None: unchanged)."""
    if records is None:
        return None if metadatas is None else [None if m is None else dict(m) for m in metadatas]
    metas = list(metadatas or [])
    metas += [None] * (n - len(metas))
    return [{**dict(m or {}), RESTORE_KEY: r} for m, r in zip(metas, records, strict=True)]


# -- one-call helpers ---------------------------------------------------------------------------
def restore(documents: Sequence[Any], embedding: Any = None, *, restorer: Restorer | None = None,
            missing: str = "raise") -> list[Any]:
    """Restore retrieved documents for the key holder (see :meth:`Restorer.restore_documents`).

    Args:
        documents: LangChain Documents, LlamaIndex nodes, or ``(id, text, record)`` tuples.
        embedding: the keyed PrivateEmbedding of their store (or pass ``restorer``).
        restorer: a :class:`Restorer` (built once: faster for many calls).
        missing: ``"raise"`` or ``"keep"`` for a document without a record.
    """
    return restorer_for(embedding, restorer).restore_documents(documents, missing=missing)


def restore_answer(answer: str, documents: Sequence[Any], embedding: Any = None, *,
                   restorer: Restorer | None = None) -> str:
    """Restore an LLM answer built from ``documents`` (see :meth:`Restorer.restore_answer`)."""
    return restorer_for(embedding, restorer).restore_answer(answer, documents)


def restorer_for(embedding: Any = None, restorer: Restorer | None = None) -> Restorer:
    """``restorer`` if given (checked), else the restorer of ``embedding`` (:meth:`Restorer.for_embedding`)."""
    if restorer is not None:
        if not isinstance(restorer, Restorer):
            raise InvalidTypeError("restorer", "a Restorer", restorer)
        return restorer
    if embedding is None:
        raise InvalidParameterError("embedding", "the keyed PrivateEmbedding of the store (or restorer=...)", None)
    return Restorer.for_embedding(embedding)

