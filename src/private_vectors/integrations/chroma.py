"""Chroma integration: registration under a stable name and configuration-drift checks.

``PrivateEmbedding`` implements Chroma's ``EmbeddingFunction`` protocol (``__call__``,
``embed_query``, ``name``, ``get_config``, ``build_from_config``, ``validate_config``,
``validate_config_update``, ``default_space``, ``supported_spaces``, ``is_legacy``) and is
registered as ``"private_vectors"`` when :mod:`private_vectors` is imported (its ``__init__``
calls :func:`register_if_available`; the core never imports this module), so a persisted
collection reopened **without** an embedding function rebuilds the same private function from
its stored config.

Chroma itself only compares embedding-function *names* when a collection is reopened with an
explicit function. Two PrivateEmbeddings with different ε, concept, mechanism or model share
the name, so :func:`register` also wraps Chroma's check (``validate_embedding_function_conflict_on_get``
in ``chromadb.api.client`` and ``chromadb.api.async_client``): for a collection written by
``PrivateEmbedding``, a given PrivateEmbedding must agree with the stored config or
:class:`~private_vectors.errors.ConfigMismatchError` is raised — never a silent switch.

Stored text. ``collection.add(documents=texts)`` embeds through the PrivateEmbedding (its text
stage runs, so the *vectors* are sanitized) but Chroma keeps the ``documents`` it was given,
i.e. the raw text. :func:`add_documents` is the one-pass alternative: each text is sanitized
once, that sanitized text is embedded and is what Chroma stores; with no text stage no text is
stored unless ``store_raw_text=True``::

    add_documents(collection, ids=["n1"], documents=["Maria Lopez flew to Madrid."])
    # stores "<PERSON> flew to <LOCATION>." (sanitize="redact") next to its perturbed vector
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..config import CHROMA_NAME, check_config_compatible
from ..embedding import _CHROMA_BASES, PrivateEmbedding
from ..errors import ArtefactError, ConfigMismatchError, InvalidTypeError
from ..restore import prepare_with_restore, with_records

__all__ = ["QUERY_INDEX_KEY", "add_documents", "check_collection", "load_query_index", "open_collection", "register",
           "register_if_available", "save_query_index"]

_PATCHED = False


def register_if_available() -> bool:
    """Register :class:`~private_vectors.PrivateEmbedding` when chromadb is installed.

    Called once by ``private_vectors/__init__``; without chromadb it does nothing and returns
    False (chromadb stays an optional dependency).
    """
    if not _CHROMA_BASES:
        return False
    register(PrivateEmbedding)
    return True


def register(cls: type) -> None:
    """Register ``cls`` with Chroma and install the drift check (idempotent)."""
    global _PATCHED
    from chromadb.utils.embedding_functions import register_embedding_function

    register_embedding_function(cls)
    if _PATCHED:
        return
    import chromadb.api.async_client as async_client
    import chromadb.api.client as client

    for mod in (client, async_client):
        original = getattr(mod, "validate_embedding_function_conflict_on_get", None)
        if original is None or getattr(original, "_private_vectors", False):
            continue
        mod.validate_embedding_function_conflict_on_get = _wrap_conflict_check(original)  # type: ignore[attr-defined]
    for cls_name in ("Client", "AsyncClient"):
        klass = getattr(client, cls_name, None) or getattr(async_client, cls_name, None)
        for method in ("get_collection", "get_or_create_collection"):
            original = getattr(klass, method, None) if klass is not None else None
            if original is not None and not getattr(original, "_private_vectors", False):
                setattr(klass, method, _name_the_collection(original))
    _PATCHED = True


def _name_the_collection(original: Any) -> Any:
    """Put the collection's name into our reopen errors (Chroma's check does not receive it)."""
    import inspect

    if inspect.iscoroutinefunction(original):
        @functools.wraps(original)
        async def async_method(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
            try:
                return await original(self, name, *args, **kwargs)
            except ConfigMismatchError as exc:
                raise _named(exc, name) from None

        async_method._private_vectors = True  # type: ignore[attr-defined]
        return async_method

    @functools.wraps(original)
    def method(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, name, *args, **kwargs)
        except ConfigMismatchError as exc:
            raise _named(exc, name) from None

    method._private_vectors = True  # type: ignore[attr-defined]
    return method


def _named(exc: ConfigMismatchError, name: str) -> ConfigMismatchError:
    message = str(exc)
    if message.startswith("this collection"):
        message = f"collection {name!r}" + message[len("this collection"):]
    elif f"{name!r}" not in message:
        message = f"collection {name!r}: {message}"
    return ConfigMismatchError(message)


def _wrap_conflict_check(original: Any) -> Any:
    @functools.wraps(original)
    def check(embedding_function: Any, persisted_ef_config: Any) -> None:
        original(embedding_function, persisted_ef_config)
        _check_against_persisted(embedding_function, persisted_ef_config)

    check._private_vectors = True  # type: ignore[attr-defined]
    return check


def _check_against_persisted(embedding_function: Any, persisted: Any, where: str = "this collection") -> None:
    if not isinstance(persisted, dict) or persisted.get("name") != CHROMA_NAME:
        return
    if isinstance(embedding_function, PrivateEmbedding):
        stored = persisted.get("config") or {}
        check_config_compatible(stored, embedding_function.get_config())
        embedding_function.bind_to_stored(stored, where)  # same key (check value), same key derivation
        return
    # no function given: Chroma will rebuild ours from the config; if that fails it would drop it
    # with a warning (and could fall back to its default function). Rebuild now, fail loudly.
    try:
        PrivateEmbedding.build_from_config(persisted.get("config") or {})
    except ConfigMismatchError:
        raise  # a wrong key: already clear
    except Exception as exc:
        raise ConfigMismatchError(
            f"this collection was written by a PrivateEmbedding that cannot be rebuilt here ({exc}); "
            "fix the cause or pass the same PrivateEmbedding explicitly") from exc


def check_collection(collection: Any, embedding_function: Any) -> None:
    """Raise :class:`ConfigMismatchError` if ``embedding_function`` does not match the
    PrivateEmbedding ``collection`` was written with (no-op for collections without one)."""
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
    _check_against_persisted(embedding_function, cfg, f"collection {collection.name!r}")


def open_collection(client: Any, name: str, embedding_function: Any = None) -> Any:
    """Open a collection; without ``embedding_function`` the stored PrivateEmbedding is rebuilt.

    Unlike ``client.get_collection(name)`` this also refuses a collection that has no
    PrivateEmbedding in its config when none is given (instead of Chroma's default function),
    and restores the text stage's keyed query index (:func:`load_query_index`).
    """
    if embedding_function is None:
        col = client.get_collection(name)
        cfg = col.configuration_json.get("embedding_function") or {}
        if cfg.get("name") != CHROMA_NAME:
            raise ConfigMismatchError(
                f"collection {name!r} has no PrivateEmbedding in its config (found {cfg.get('name')!r}); "
                "pass embedding_function explicitly")
        load_query_index(col, getattr(col, "_embedding_function", None))
        return col
    col = client.get_collection(name, embedding_function=embedding_function)
    check_collection(col, embedding_function)
    load_query_index(col, embedding_function)
    return col


def add_documents(collection: Any, *, ids: Sequence[str], documents: Sequence[str],
                  metadatas: Sequence[Mapping[str, Any]] | None = None, embedding: Any = None,
                  store_raw_text: bool = False, upsert: bool = False) -> list[str] | None:
    """Add ``documents`` to a Chroma ``collection`` in one pass (see the module docstring).

    Args:
        collection: a Chroma collection written by a PrivateEmbedding.
        ids: one id per document.
        documents: the raw texts.
        metadatas: optional metadata per document (stored as given).
        embedding: the PrivateEmbedding (default: the collection's own embedding function).
        store_raw_text: store the raw texts (the stolen store then holds them in clear).
            Without it, a keyed text stage also stores each document's encrypted restore
            record in its metadata (``pv_restore``; :mod:`private_vectors.restore`).
        upsert: ``collection.upsert`` instead of ``collection.add``.

    Returns:
        The texts stored (sanitized, raw, or None when no text is stored).

    Raises:
        ConfigMismatchError: ``embedding`` differs from the PrivateEmbedding the collection
            was written with.
    """
    ef = embedding if embedding is not None else getattr(collection, "_embedding_function", None)
    if not isinstance(ef, PrivateEmbedding):
        raise InvalidTypeError("embedding", "a PrivateEmbedding (or a collection opened with one)", ef)
    check_collection(collection, ef)
    ids = list(ids)
    stored, vectors, records = prepare_with_restore(ef, documents, ids, store_raw_text=store_raw_text)
    kwargs: dict[str, Any] = {"ids": ids, "embeddings": vectors}
    if stored is not None:
        kwargs["documents"] = stored
    metas = with_records(metadatas, records, len(ids))  # a keyed text stage: each record under pv_restore
    if metas is not None:
        kwargs["metadatas"] = metas
    (collection.upsert if upsert else collection.add)(**kwargs)
    save_query_index(collection, ef)
    return stored


QUERY_INDEX_KEY = "private_vectors:query_index"
"""Collection-metadata key of the text stage's keyed query index (HMACs, never names)."""


def save_query_index(collection: Any, embedding: Any) -> bool:
    """Persist ``embedding``'s keyed query index in the collection's metadata (a JSON string;
    no-op and False without one). Called by :func:`add_documents` and ``chroma_store`` adds."""
    state = embedding.query_index_state() if isinstance(embedding, PrivateEmbedding) else None
    if state is None:
        return False
    meta = dict(collection.metadata or {})
    meta[QUERY_INDEX_KEY] = json.dumps(state, sort_keys=True)
    collection.modify(metadata=meta)
    return True


def load_query_index(collection: Any, embedding: Any) -> bool:
    """Restore the keyed query index saved by :func:`save_query_index` into ``embedding``'s
    text stage (False when the collection has none). Called by :func:`open_collection` and
    ``chroma_store``; a collection reopened with ``client.get_collection`` needs this call."""
    raw = (collection.metadata or {}).get(QUERY_INDEX_KEY)
    if not raw or not isinstance(embedding, PrivateEmbedding):
        return False
    try:
        state = json.loads(raw)
    except ValueError as exc:
        raise ArtefactError(f"collection {collection.name!r}: {QUERY_INDEX_KEY} is not valid JSON ({exc})") from exc
    return embedding.load_query_index_state(state)
