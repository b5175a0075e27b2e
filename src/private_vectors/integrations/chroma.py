"""Chroma integration: registration under a stable name and configuration-drift checks.

``PrivateEmbedding`` implements Chroma's ``EmbeddingFunction`` protocol (``__call__``,
``embed_query``, ``name``, ``get_config``, ``build_from_config``, ``validate_config``,
``validate_config_update``, ``default_space``, ``supported_spaces``, ``is_legacy``) and is
registered as ``"private_vectors"`` through Chroma's public ``register_embedding_function``
when this module is imported (by ``private_vectors.chroma``, the drop-in stores and the other
integrations; the core never imports it), so a persisted collection reopened **without** an
embedding function rebuilds the same private function from its stored config. Nothing of
chromadb is patched.

Chroma itself only compares embedding-function *names* when a collection is reopened with an
explicit function, and two PrivateEmbeddings with different ε, concept, mechanism, model or key
share the name. The library's own paths check the whole recorded configuration
(:func:`check_collection`, called by :func:`open_collection`, :func:`create_collection`,
:func:`add_documents` and the drop-in stores) and raise
:class:`~private_vectors.errors.ConfigMismatchError`, never a silent switch; a plain
``client.get_collection(name, embedding_function=ef)`` does not (call :func:`check_collection`
after it, or use :func:`open_collection`).

Stored text. ``collection.add(documents=texts)`` embeds through the PrivateEmbedding (its text
stage runs, so the *vectors* are sanitized) but Chroma keeps the ``documents`` it was given,
i.e. the raw text. :func:`add_documents` (also ``private_vectors.chroma.add_documents``) is the
protected call: each text is sanitized once, that sanitized text is embedded and is what
Chroma stores (with no text stage no text is stored unless ``store_raw_text=True``), string
metadata values are sanitized too, and the recorded configuration and key are checked::

    add_documents(collection, ids=["n1"], documents=["Maria Lopez flew to Madrid."])
    # stores "<PERSON> flew to <LOCATION>." (sanitize="redact") next to its perturbed vector

Keys on reopen. :func:`open_collection` takes the key as ``key=`` or from
``PRIVATE_VECTORS_KEY`` (both given and different: an error). A collection opened with a
PrivateEmbedding in its *configuration* rather than as Chroma's ``embedding_function`` (as
``langchain_chroma`` does) is checked against that function, whose key is bound, instead of
being rebuilt from the stored config without the key.

The keyed query index (HMACs of the entity words the text stage replaced) lives in its own
collection, :func:`query_index_collection_name`: one record per HMAC, upserted per batch
(:func:`save_query_index`), read on first use after a reopen (:func:`load_query_index`).
Concurrent writers through a Chroma server lose no entry; a local folder is single-writer.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from .._build_cache import remember_live
from ..config import CHROMA_NAME, check_config_compatible, comparable_config, sanitizer_upgrade
from ..embedding import PrivateEmbedding
from ..errors import (
    ConfigMismatchError,
    Described,
    InvalidParameterError,
    InvalidTypeError,
    PrivacyWarning,
)
from ..guard import protected_path
from ..keys import SecretKey, key_scope
from ._stored import METADATA_TEXT, check_unique_ids, sanitize_values, warn_existing_ids
from .chroma_files import scrub_collection, writing
from .chroma_query_index import (
    QUERY_INDEX_KEY,
    _existing_index_collection,
    load_query_index,
    query_index_collection_name,
    save_query_index,
    write_query_index,
)
from .chroma_sealed import clear_write, sealed_write, sealer_of

__all__ = ["METADATA_TEXT", "QUERY_INDEX_KEY", "add_documents", "check_collection", "create_collection",
           "load_query_index", "open_collection", "protected_write", "query_index_collection_name", "register",
           "register_if_available", "save_query_index", "scrub_index_files", "upgrade_recorded_config",
           "write_query_index"]

def register_if_available() -> bool:
    """Register :class:`~private_vectors.PrivateEmbedding` when chromadb is installed.

    Called when this module is imported; without chromadb it does nothing and returns False
    (chromadb stays an optional dependency).
    """
    try:
        import chromadb.utils.embedding_functions  # noqa: F401
    except ImportError:  # pragma: no cover - chromadb not installed
        return False
    register(PrivateEmbedding)
    return True


def register(cls: type) -> None:
    """Register ``cls`` with Chroma under its ``name()`` (Chroma's public registry; idempotent)."""
    from chromadb.utils.embedding_functions import register_embedding_function

    register_embedding_function(cls)


def _named(exc: ConfigMismatchError, name: str) -> ConfigMismatchError:
    message = str(exc)
    if message.startswith("this collection"):
        message = f"collection {name!r}" + message[len("this collection"):]
    elif f"{name!r}" not in message:
        message = f"collection {name!r}: {message}"
    return ConfigMismatchError(message)


def _check_against_persisted(embedding_function: Any, persisted: Any, where: str = "this collection") -> None:
    if not isinstance(persisted, dict) or persisted.get("name") != CHROMA_NAME:
        return
    if isinstance(embedding_function, PrivateEmbedding):
        stored = persisted.get("config") or {}
        check_config_compatible(comparable_config(stored, embedding_function), embedding_function.get_config())
        embedding_function.pipeline.bind(stored, where)  # same key (check value), same key derivation
        # Chroma rebuilds the stored function on later reads of the collection's schema (every add):
        # in this process that rebuild is this checked function, which holds the key
        if embedding_function.pipeline.keying.keyed:  # (an unkeyed function rebuilds without help)
            remember_live(stored, embedding_function)


def _rebuild(config: dict[str, Any], name: str) -> PrivateEmbedding:
    """The stored PrivateEmbedding, rebuilt; any failure is a :class:`ConfigMismatchError`
    naming the collection (never Chroma's default function)."""
    try:
        return PrivateEmbedding.build_from_config(config)
    except ConfigMismatchError as exc:
        raise _named(exc, name) from None
    except Exception as exc:
        raise ConfigMismatchError(
            f"collection {name!r} was written by a PrivateEmbedding that cannot be rebuilt here ({exc}); "
            "fix the cause or pass the same PrivateEmbedding explicitly") from exc


def _needs_upgrade(collection: Any, embedding: PrivateEmbedding) -> bool:
    """Whether the recorded config predates hidden token lists or per-store check salts."""
    stored = ((collection.configuration_json or {}).get("embedding_function") or {}).get("config") or {}
    san = stored.get("sanitizer")
    if not isinstance(san, dict) or embedding.sanitizer is None:
        return False
    return (comparable_config(stored, embedding)["sanitizer"] != san or (bool(san.get("keyed")) and "key_salt" not in san)
            or sanitizer_upgrade(san, embedding.sanitizer.get_config()))


def _upgrade_config(collection: Any, embedding: PrivateEmbedding) -> None:
    """Record ``embedding``'s config (token lists as HMACs, the text stage's own check salt)
    in place of one written by an earlier version. Chroma rebuilds the stored function to
    validate the change, with the key in scope. SQLite may keep the old bytes in free pages
    until the file is vacuumed."""
    secret = embedding.pipeline.keying.secret
    try:
        with key_scope(secret):
            collection.modify(configuration={"embedding_function": embedding})
    except Exception as exc:  # the data written is unaffected; say what stays
        warnings.warn(f"collection {collection.name!r}: its configuration written by an earlier version (token "
                      f"lists and allow list in clear) could not be upgraded ({type(exc).__name__}); create a new "
                      "collection to drop it", PrivacyWarning, stacklevel=3)


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


def _renamed_embedding(embedding: Any, embedding_function: Any, where: str) -> Any:
    """``embedding``, or the deprecated ``embedding_function=`` (every store helper names it ``embedding``)."""
    if embedding_function is _UNSET:
        return None if embedding is _UNSET else embedding
    warnings.warn(f"{where}(embedding_function=...) is deprecated: pass embedding=... (the name every store helper "
                  "uses)", DeprecationWarning, stacklevel=3)
    if embedding is not _UNSET and embedding is not None:
        raise InvalidParameterError("embedding_function", "the same function given once (embedding= or the "
                                    "deprecated embedding_function=)", Described("both"))
    return embedding_function


def check_collection(collection: Any, embedding: Any = _UNSET, *, embedding_function: Any = _UNSET) -> None:
    """Raise :class:`ConfigMismatchError` if ``embedding`` does not match the PrivateEmbedding
    ``collection`` was written with (no-op for collections without one). ``embedding_function=``
    is the deprecated name of ``embedding``."""
    embedding_function = _renamed_embedding(embedding, embedding_function, "check_collection")
    cfg = collection.configuration_json.get("embedding_function") if hasattr(
        collection, "configuration_json") else None
    if cfg is None:
        try:
            cfg = collection._model.configuration_json.get("embedding_function")
        except AttributeError:
            cfg = None
    if isinstance(cfg, dict) and cfg.get("name") == CHROMA_NAME and not isinstance(
            embedding_function, PrivateEmbedding):
        raise ConfigMismatchError(
            f"collection {collection.name!r} was written by a PrivateEmbedding; {type(embedding_function).__name__} "
            "would embed queries and documents differently")
    try:
        _check_against_persisted(embedding_function, cfg, f"collection {collection.name!r}")
    except ConfigMismatchError as exc:
        raise _named(exc, collection.name) from None


def create_collection(client: Any, name: str, embedding: PrivateEmbedding, *, get_or_create: bool = False,
                      metadata: Mapping[str, Any] | None = None) -> Any:
    """A Chroma collection that records ``embedding`` and uses its distance space.

    Equivalent to ``client.create_collection(name, embedding_function=embedding,
    configuration={"hnsw": {"space": embedding.space}})``; with ``get_or_create=True`` an
    existing collection is opened instead (and checked, as :func:`open_collection` does).
    """
    if not isinstance(embedding, PrivateEmbedding):
        raise InvalidTypeError("embedding", "a PrivateEmbedding", embedding)
    make = client.get_or_create_collection if get_or_create else client.create_collection
    col = make(name, embedding_function=embedding, configuration={"hnsw": {"space": embedding.space}},
               metadata=dict(metadata) if metadata else None)
    check_collection(col, embedding)
    load_query_index(col, embedding)
    return col


def open_collection(client: Any, name: str, embedding: Any = None, *, key: Any = None,
                    embedding_function: Any = _UNSET) -> Any:
    """Open a collection written by a PrivateEmbedding, ready for :func:`add_documents` and queries.

    Args:
        client: a Chroma client.
        name: the collection.
        embedding: the PrivateEmbedding to use (checked against the stored one); default: the
            stored PrivateEmbedding is rebuilt from the collection's config.
        key: the collection's key when the stored function is rebuilt (default: env
            ``PRIVATE_VECTORS_KEY``; both given and different: an error). A function passed as
            ``embedding`` brings its own key.
        embedding_function: the deprecated name of ``embedding``.

    Unlike ``client.get_collection(name)`` this refuses a collection that has no
    PrivateEmbedding in its config (instead of Chroma's default function), and arranges for
    the text stage's keyed query index to be loaded on first use (:func:`load_query_index`).

    Raises:
        ConfigMismatchError: another configuration or another key (naming the collection, never the key).
    """
    embedding_function = _renamed_embedding(embedding, embedding_function, "open_collection")
    if embedding_function is None:
        try:
            secret = SecretKey.resolve(key, min_bytes=1)
        finally:
            del key
        with key_scope(secret):
            col = client.get_collection(name, embedding_function=None)
            cfg = col.configuration_json.get("embedding_function") or {}
            if cfg.get("name") != CHROMA_NAME:
                raise ConfigMismatchError(
                    f"collection {name!r} has no PrivateEmbedding in its config (found {cfg.get('name')!r}); "
                    "pass embedding= explicitly")
            embedding_function = _rebuild(cfg.get("config") or {}, name)
    elif key is not None:
        raise InvalidParameterError("key", "no key together with embedding (the function has its own)", Described("<a key>"))
    col = client.get_collection(name, embedding_function=embedding_function)
    check_collection(col, embedding_function)
    load_query_index(col, embedding_function)
    return col


def add_documents(collection: Any, *, ids: Sequence[str], documents: Sequence[str],
                  metadatas: Sequence[Mapping[str, Any] | None] | None = None, embedding: Any = None,
                  store_raw_text: bool = False, upsert: bool = False, metadata_text: str = "sanitize") -> list[str] | None:
    """Add ``documents`` to a Chroma ``collection`` written by a PrivateEmbedding, in one pass.

    Each text is sanitized once; that sanitized text is embedded and is what Chroma stores
    (with no text stage, no text is stored unless ``store_raw_text=True``). The collection's
    recorded configuration is checked first (another ε, concept, mechanism, text stage or key
    is refused), the text stage's keyed query index is updated with this batch's entries only,
    and the embedding runs on the library's protected path (no raw-text warning).

    Args:
        collection: a Chroma collection whose configuration records a PrivateEmbedding
            (:func:`create_collection`, ``client.create_collection(name, embedding_function=ef)``
            or :func:`open_collection`).
        ids: one id per document.
        documents: the raw texts.
        metadatas: optional metadata per document.
        embedding: the PrivateEmbedding (default: the collection's own embedding function).
        store_raw_text: store the raw texts (the stolen store then holds them in clear).
            Without it, a keyed text stage also stores each document's encrypted restore
            record in its metadata (``pv_restore``; :mod:`private_vectors.restore`).
        upsert: ``collection.upsert`` instead of ``collection.add``.
        metadata_text: ``"sanitize"`` (default): string metadata values go through the same
            text stage as the documents; without a text stage they are stored as given with a
            :class:`~private_vectors.errors.PrivacyWarning`. ``"keep"``: stored as given, no
            warning (for metadata you know holds no personal data: ids, dates, categories).

    Empty ``ids`` and ``documents`` add nothing. An id the collection already holds is left
    as it is (Chroma's ``add``) or replaced (``upsert=True``), with a warning naming it.

    Returns:
        The texts stored (sanitized, raw, or None when no text is stored).

    Raises:
        ConfigMismatchError: the collection records no PrivateEmbedding, or another one.
        InvalidParameterError / InvalidTypeError: bad arguments (nothing is stored).
    """
    ef = embedding if embedding is not None else getattr(collection, "_embedding_function", None)
    if not isinstance(ef, PrivateEmbedding):
        raise InvalidTypeError("embedding", "a PrivateEmbedding (or a collection opened with one)", ef)
    if metadata_text not in METADATA_TEXT:
        raise InvalidParameterError("metadata_text", f"one of {list(METADATA_TEXT)}", metadata_text)
    _require_recorded(collection)
    check_collection(collection, ef)
    ids = list(ids)
    if isinstance(documents, str):
        raise InvalidTypeError("documents", "a list of strings", Described("<str>"), note="wrap a single text in a list")
    if len(ids) != len(documents):
        raise InvalidParameterError("ids", f"{len(documents)} ids (one per document)", Described(f"{len(ids)} ids"))
    metas = _metadatas(metadatas, len(ids))
    if not ids:  # nothing to add (Chroma itself refuses an empty batch)
        return [] if store_raw_text or ef.sanitizer is not None else None
    bad = next((n for n, i in enumerate(ids) if not isinstance(i, str) or not i), None)
    if bad is not None:  # (before Chroma sees them: its own error would show the id)
        raise InvalidTypeError(f"ids[{bad}]", "a non-empty str (Chroma's ids are strings)", ids[bad])
    check_unique_ids(ids, "Chroma")
    sealer = sealer_of(collection, ef)  # a sealed collection: markers, records, noisy vectors (chroma_sealed)
    as_stored = dict(zip(ids, ids if sealer is None else [sealer.stored_id(i) for i in ids], strict=True))
    held = set(collection.get(ids=list(as_stored.values()), include=[])["ids"])
    warn_existing_ids([i for i in ids if as_stored[i] in held], f"collection {collection.name!r}",
                      "replaced (upsert=True)" if upsert else "Chroma's add keeps the stored documents "
                      "(upsert=True replaces them)", ids)
    with protected_path():  # documents first: the text stage then knows their names in a lone metadata value
        kwargs, stored = (clear_write if sealer is None else functools.partial(sealed_write, sealer=sealer))(
            ef, ids, documents, metas, store_raw_text=store_raw_text,
            sanitize_metadata=lambda m: _metadata_text(ef, m, metadata_text))
    with protected_write(collection):
        (collection.upsert if upsert else collection.add)(**kwargs)
        save_query_index(collection, ef)
    upgrade_recorded_config(collection, ef)
    return stored


def upgrade_recorded_config(collection: Any, embedding: Any) -> None:
    """After a write: record ``embedding``'s configuration in place of one an earlier version wrote
    (token lists in clear, no per-store check salt, an older text stage: ``upgraded_from``)."""
    if isinstance(embedding, PrivateEmbedding) and _needs_upgrade(collection, embedding):
        _upgrade_config(collection, embedding)


def scrub_index_files(collection: Any) -> int:
    """Zero the heap bytes Chroma left in the HNSW files of ``collection`` and of its keyed query
    index collection (a local persistent folder only); returns the bytes changed.

    chromadb writes a new HNSW segment's whole preallocated arrays, uninitialised, so a small
    collection's ``data_level0.bin`` and ``length.bin`` can hold whatever the process heap held,
    raw documents included (:mod:`private_vectors.integrations.chroma_files`). The protected
    paths (:func:`add_documents`, ``private_vectors.langchain.Chroma``,
    ``private_vectors.llamaindex.index_from_collection``) call this after every write; call it
    yourself after writing through another path (``collection.add``, LlamaIndex's own
    ``ChromaVectorStore``), when no other write to the folder is in flight. A collection on a
    Chroma server or in memory is left alone (returns 0): its files, if any, are the server's.
    """
    changed = scrub_collection(collection)
    side = _existing_index_collection(collection)
    if side is not None:
        changed += scrub_collection(side)
    return changed


@contextmanager
def protected_write(collection: Any) -> Iterator[None]:
    """Write to ``collection`` under its folder's write lock, then scrub its index files
    (:func:`scrub_index_files`), also when the write raised part-way."""
    with writing(collection):
        try:
            yield
        finally:
            scrub_index_files(collection)


def _require_recorded(collection: Any) -> None:
    """Refuse a collection whose configuration does not record a PrivateEmbedding (Chroma
    cannot record one later: its embedding function is fixed when it is created)."""
    try:
        cfg = (collection.configuration_json or {}).get("embedding_function") or {}
    except AttributeError:  # pragma: no cover - a collection-like object without a config
        return
    if cfg.get("name") != CHROMA_NAME:
        raise ConfigMismatchError(
            f"collection {collection.name!r} does not record a PrivateEmbedding (found {cfg.get('name')!r}), so a "
            "reopen could not check ε, concept or key; create it with private_vectors.chroma.create_collection("
            "client, name, embedding) or client.create_collection(name, embedding_function=embedding)")


def _metadatas(metadatas: Any, n: int) -> list[dict[str, Any] | None] | None:
    if metadatas is None:
        return None
    if isinstance(metadatas, Mapping):
        raise InvalidTypeError("metadatas", "a list with one mapping (or None) per document", Described("<a single mapping>"))
    metas = [None if m is None else dict(m) for m in metadatas]
    if len(metas) != n:
        raise InvalidParameterError("metadatas", f"{n} entries (one per document)", Described(f"{len(metas)} entries"))
    return metas


def _metadata_text(ef: PrivateEmbedding, metas: list[dict[str, Any] | None], mode: str) -> list[Any]:
    """String metadata values through the text stage (``"sanitize"``), or as given."""
    slots = [(i, k) for i, m in enumerate(metas) if m for k, v in m.items() if isinstance(v, str) and v.strip()]
    if not slots or mode == "keep":
        return metas
    if ef.sanitizer is None:
        warnings.warn(
            f"add_documents: {len(slots)} string metadata value(s) are stored as given: this PrivateEmbedding has "
            "no text stage to sanitize them. Keep personal data out of metadata, give the function a text stage "
            "(sanitize='redact'), or pass metadata_text='keep' once you have checked them", PrivacyWarning,
            stacklevel=3)
        return metas
    clean = sanitize_values(ef, [metas[i][k] for i, k in slots])  # type: ignore[index]
    out = [None if m is None else dict(m) for m in metas]
    for (i, k), v in zip(slots, clean, strict=True):
        out[i][k] = v  # type: ignore[index]
    return out


register_if_available()
