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
"""

from __future__ import annotations

import functools
from typing import Any

from ..config import CHROMA_NAME, check_config_compatible
from ..embedding import _CHROMA_BASES, PrivateEmbedding
from ..errors import ConfigMismatchError

__all__ = ["check_collection", "open_collection", "register", "register_if_available"]

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
    PrivateEmbedding in its config when none is given (instead of Chroma's default function).
    """
    if embedding_function is None:
        col = client.get_collection(name)
        cfg = col.configuration_json.get("embedding_function") or {}
        if cfg.get("name") != CHROMA_NAME:
            raise ConfigMismatchError(
                f"collection {name!r} has no PrivateEmbedding in its config (found {cfg.get('name')!r}); "
                "pass embedding_function explicitly")
        return col
    col = client.get_collection(name, embedding_function=embedding_function)
    check_collection(col, embedding_function)
    return col
