"""What sealing a store means, as options: :class:`Sealing` and the one rule that resolves ``seal=``.

With a key, a sealed store keeps one AEAD record per document (the sanitized text, the restore
record, the metadata and the exact vector) and only the noisy vector as searchable cleartext
(:mod:`private_vectors.sealed.records`). :func:`resolve_sealing` maps what a user passes as
``PrivateEmbedding(seal=...)`` onto a :class:`Sealing` or None (not sealed):

==================  =====================================================================
``seal=``           resolved
==================  =====================================================================
None (default)      ``Sealing()`` when the function is keyed, else None (not sealed)
True                ``Sealing()``; without a key an error naming ``key``
False               None: the store keeps the sanitized text in clear (recorded as such)
``Sealing(...)``    itself (a dict: ``Sealing(**dict)``); without a key an error naming ``key``
==================  =====================================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

from .._validation import check_choice
from ..errors import Described, InvalidParameterError, InvalidTypeError
from .vector_cache import DEFAULT_BUDGET, check_budget, check_max_age

__all__ = ["Sealing", "resolve_sealing"]

SEAL_VERSION = 1
ID_MODES = ("given", "hmac")
"""``ids="given"``: the store's id is the user's; ``"hmac"``: a keyed HMAC of it (the real id is sealed)."""
VECTOR_FORMATS = ("float16", "float32")
"""How the exact vector is kept in a record (float16 halves its size; ranking barely moves)."""
_SETTINGS = ("readable_metadata", "ids", "vector")


class _KeyringNotGiven:
    """The keyring of a store that records one, when the function was given none."""

    def __repr__(self) -> str:
        return "<keyring not given>"


KEYRING_NOT_GIVEN: Any = _KeyringNotGiven()


@dataclass(frozen=True)
class Sealing:
    """The options of a sealed store (validated; a store records them beside its data key).

    Attributes:
        readable_metadata: metadata keys kept readable for filtering (``where=``); their string
            values go through the text stage as in unsealed stores. Every other metadata value
            is kept only inside the document's sealed record.
        ids: ``"given"`` (the store's ids are yours) or ``"hmac"`` (a keyed HMAC of each id;
            the real id is inside the record).
        vector: ``"float16"`` (default) or ``"float32"``: how the exact vector is sealed.
        keyring: None (each record's key derives from the store's data key and the document
            id), a path of a :class:`~private_vectors.sealed.datakey.KeyringFile`, or a
            :class:`~private_vectors.sealed.datakey.KeyStore`: per-document keys held apart
            from the store, destroyed on delete (crypto-shredding).
        wrapper: the :class:`~private_vectors.sealed.datakey.KeyWrapper` that wraps the store's
            data key (default: :class:`~private_vectors.sealed.datakey.LocalKeyWrapper` under
            the user's key).
        vector_cache: bytes of exact vectors the key holder keeps in memory per store, so a
            query re-ranks the candidates it has seen without fetching their records
            (:mod:`~private_vectors.sealed.vector_cache`; default 64 MiB); 0 turns it off. A
            reader's option: not recorded with the store.
        vector_cache_max_age: seconds after which a cached vector is fetched again (None: kept
            until evicted); a bound on how long a document changed by another writer can be
            ranked by its old vector. Not recorded.
    """

    readable_metadata: tuple[str, ...] = ()
    ids: str = "given"
    vector: str = "float16"
    keyring: Any = field(default=None, compare=False)
    wrapper: Any = field(default=None, compare=False)
    vector_cache: int = field(default=DEFAULT_BUDGET, compare=False)
    vector_cache_max_age: float | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "vector_cache", check_budget(self.vector_cache))
        object.__setattr__(self, "vector_cache_max_age", check_max_age(self.vector_cache_max_age))
        object.__setattr__(self, "readable_metadata", _metadata_keys(self.readable_metadata))
        check_choice(self.ids, "ids", ID_MODES)
        check_choice(self.vector, "vector", VECTOR_FORMATS)
        if self.keyring is not None and self.keyring is not KEYRING_NOT_GIVEN and not isinstance(
                self.keyring, (str, os.PathLike)) and not all(
                callable(getattr(self.keyring, m, None)) for m in ("get", "put", "destroy")):
            raise InvalidTypeError("keyring", "None, a path or a KeyStore (get, put, destroy)",
                                   Described(f"<{type(self.keyring).__name__}>"))
        if self.wrapper is not None and not all(callable(getattr(self.wrapper, m, None))
                                                for m in ("wrap", "unwrap", "describe")):
            raise InvalidTypeError("wrapper", "None or a KeyWrapper (wrap, unwrap, describe)",
                                   Described(f"<{type(self.wrapper).__name__}>"))

    def __repr__(self) -> str:
        keyring = None if self.keyring is None else f"<{type(self.keyring).__name__}>"
        wrapper = None if self.wrapper is None else f"<{type(self.wrapper).__name__}>"
        return (f"Sealing(readable_metadata={self.readable_metadata!r}, ids={self.ids!r}, vector={self.vector!r}, "
                f"keyring={keyring}, wrapper={wrapper}, vector_cache={self.vector_cache}, "
                f"vector_cache_max_age={self.vector_cache_max_age})")

    @property
    def has_keyring(self) -> bool:
        """Whether per-document keys live in a keyring (recorded as ``"keyring": true``)."""
        return self.keyring is not None

    def settings(self) -> dict[str, Any]:
        """The recorded settings (JSON-safe; never a path, never an object)."""
        return {"v": SEAL_VERSION, "readable_metadata": list(self.readable_metadata), "ids": self.ids,
                "vector": self.vector, "keyring": self.has_keyring}

    @classmethod
    def from_settings(cls, stored: dict[str, Any], *, keyring: Any = None, wrapper: Any = None,
                      reader: Sealing | None = None) -> Sealing:
        """The :class:`Sealing` a store recorded (:meth:`settings`), with the given keyring and
        wrapper, and the reader's options (``vector_cache``...) of ``reader`` (default: the defaults)."""
        if not isinstance(stored, dict):
            raise InvalidTypeError("seal", "a recorded sealing (dict)", stored)
        version = stored.get("v", SEAL_VERSION)
        if version != SEAL_VERSION:
            raise InvalidParameterError("seal", f"a sealing of format {SEAL_VERSION} (upgrade private_vectors)",
                                        Described(f"format {version!r}"))
        if keyring is None and stored.get("keyring"):
            keyring = KEYRING_NOT_GIVEN  # recorded: reads and writes ask for it
        return cls(readable_metadata=tuple(stored.get("readable_metadata") or ()), ids=stored.get("ids", "given"),
                   vector=stored.get("vector", "float16"), keyring=keyring, wrapper=wrapper,
                   vector_cache=(reader or cls()).vector_cache,
                   vector_cache_max_age=(reader or cls()).vector_cache_max_age)

    def differs_from(self, stored: Sealing) -> list[str]:
        """The settings (names) this sealing sets away from their defaults and a stored one has
        otherwise (a keyring given for a store without one counts; a default adopts the store's)."""
        default = Sealing()
        out = [n for n in _SETTINGS if getattr(self, n) != getattr(default, n) and getattr(self, n) != getattr(stored, n)]
        return out + (["keyring"] if self.has_keyring and not stored.has_keyring else [])


def _metadata_keys(keys: Any) -> tuple[str, ...]:
    if isinstance(keys, str):
        raise InvalidTypeError("readable_metadata", "a list of metadata keys", Described("<str>"),
                               note="wrap a single key in a list")
    try:
        items = tuple(keys)
    except TypeError:
        raise InvalidTypeError("readable_metadata", "a list of metadata keys", Described(f"<{type(keys).__name__}>")) from None
    bad = [i for i, k in enumerate(items) if not isinstance(k, str) or not k]
    if bad:
        raise InvalidParameterError("readable_metadata", "non-empty str keys", Described(f"<a list with bad entries at {bad[:5]}>"))
    return tuple(dict.fromkeys(items))


def check_seal(seal: Any) -> Any:
    """``seal`` as written, validated: None, True, False or a :class:`Sealing` (a dict becomes one)."""
    if seal is None or isinstance(seal, (bool, Sealing)):
        return seal
    if isinstance(seal, dict):
        unknown = sorted(set(seal) - {f.name for f in fields(Sealing)})
        if unknown:
            raise InvalidParameterError("seal", f"a dict with keys among {[f.name for f in fields(Sealing)]}",
                                        Described(f"<a dict with unknown keys {unknown}>"))
        return Sealing(**seal)
    raise InvalidTypeError("seal", "None, True, False, a Sealing or a dict of its fields", Described(f"<{type(seal).__name__}>"))


def resolve_sealing(seal: Any, *, keyed: bool) -> Sealing | None:
    """The table of this module: ``seal`` (as :func:`check_seal` returns it) → a Sealing or None.

    Raises:
        InvalidParameterError: naming ``key``, for sealing asked for without a key.
    """
    seal = check_seal(seal)
    if seal is None:
        return Sealing() if keyed else None
    if seal is False:
        return None
    if not keyed:
        raise InvalidParameterError("key", "a secret (key=... or PRIVATE_VECTORS_KEY) for a sealed store", None,
                                    note="sealing encrypts each document under a data key wrapped by your key; "
                                    "pass seal=False to keep the sanitized text in clear")
    return Sealing() if seal is True else seal
