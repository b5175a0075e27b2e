"""Keyed record hashes: where a framework keys its records by a hash of the content.

LlamaIndex's docstore and LangChain's ``index()`` record manager and ``CacheBackedEmbeddings``
key their records by an unkeyed hash (SHA-1, SHA-256) of each document's raw text and metadata.
A hash of a short text is reversed by hashing guesses (a list of names, a form letter with each
name filled in), so such a key stores the raw text in all but name. The protected paths key
these records by an HMAC-SHA256 (RFC 2104) under a subkey of the PrivateEmbedding's key
instead: stable across processes for the same key (so de-duplication, caching and incremental
clean-up keep working), and without the key no guess can be checked.

The subkey is HKDF-SHA256 (RFC 5869) of the key's restore subkey, stretched by scrypt with a
fixed public salt (one stretch per key and process) and a label naming the use (``purpose``),
so the hashes of one use say nothing about another's.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from ..errors import Described, InvalidParameterError
from ..keys import hkdf_sha256, make_key_hint

__all__ = ["RecordHasher", "record_hasher"]

_SALT = b"private_vectors/record-hash/v1"
"""Public, fixed salt of the stretched key: the hashes must not depend on a collection's salt,
since a framework compares them across stores and processes."""


class RecordHasher:
    """``hasher(text) -> hex``: HMAC-SHA256 of ``text`` under a subkey of a key. Repr redacted;
    never pickled (key material).

    Args:
        secret: the :class:`~private_vectors.keys.SecretKey`.
        purpose: the use, part of the subkey's label (e.g. ``"langchain-index"``).
    """

    def __init__(self, secret: Any, purpose: str) -> None:
        schedule = secret.schedule("v2", _SALT)
        self._subkey = hkdf_sha256(bytes(schedule.restore), salt=_SALT,
                                   info=b"private_vectors/record-hash/v1/" + purpose.encode())
        self.purpose = purpose

    def __call__(self, text: str) -> str:
        return hmac.new(self._subkey, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def __repr__(self) -> str:
        return f"RecordHasher(purpose={self.purpose!r}, <key redacted>)"

    def __reduce__(self) -> Any:
        raise TypeError("RecordHasher: key material is never pickled; build it again from the key")


def record_hasher(embedding: Any, purpose: str, *, required: str | None = None) -> RecordHasher | None:
    """The keyed hasher of a PrivateEmbedding's key, or None when it has no key.

    Args:
        embedding: the PrivateEmbedding.
        purpose: the use (see :class:`RecordHasher`).
        required: when given, a missing key is an error naming this parameter instead of None.

    Raises:
        InvalidParameterError: ``required`` is given and the embedding has no key.
    """
    secret = embedding.pipeline.keying.secret
    if secret is None:
        if required is not None:
            raise InvalidParameterError(
                required, "a PrivateEmbedding with a key: these records are keyed by an HMAC of each document "
                "under it (without one the only stable key is an unkeyed hash of the raw text, which a "
                "dictionary of guesses reverses)", Described("a PrivateEmbedding without a key"), note=make_key_hint())
        return None
    return RecordHasher(secret, purpose)
