"""LangChain integration: a drop-in ``Chroma`` vector store and :func:`chroma_store`.

``PrivateEmbedding`` is a ``langchain_core.embeddings.Embeddings`` (``embed_documents``,
``embed_query``, ``aembed_documents``, ``aembed_query``; each call, sync or async, draws its
own random stream), so it plugs into any LangChain vector store. The plain
``langchain_chroma.Chroma`` however

- creates its collection *without* the embedding function (``embedding_function=None`` is
  passed to Chroma), so the PrivateEmbedding's config is not recorded, a reopen with another
  ε/concept/key is not refused, and the collection gets Chroma's default space (L2);
- stores every ``page_content`` verbatim next to the noisy vector.

:class:`Chroma` here is a subclass with the very same constructor (plus one keyword,
``store_raw_text``), so only the import changes::

    from private_vectors.langchain import Chroma      # was: from langchain_chroma import Chroma
    store = Chroma(embedding_function=PrivateEmbedding(concept="PII", eps=10))

It records the PrivateEmbedding in the collection's configuration (Chroma's
embedding-function registration: drift and key checks on every reopen), creates the
collection in the space the PrivateEmbedding chooses, and stores no document text unless
``store_raw_text=True``. With a PrivateEmbedding that has a text stage (``sanitize=``), each
text is sanitized once (``PrivateEmbedding.prepare_documents``): that sanitized text is what is
embedded and what the collection stores, and the text stage's keyed query index is saved in the
collection's metadata and restored on reopen. String metadata values go through the same text
stage (without one they are stored as given, with one PrivacyWarning per store). Relevance
scores are calibrated to the noise the collection was written with
(:mod:`private_vectors.integrations.scores`), so ``similarity_score_threshold`` retrievers keep
the thresholds that work on a plain store.

:class:`FAISS` is the same drop-in for ``langchain_community``'s FAISS store (see
:mod:`private_vectors.integrations.langchain_faiss`).
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..embedding import CHROMA_NAME, PrivateEmbedding, rebuild
from ..errors import Described, InvalidParameterError, InvalidTypeError, ModelNotAvailableError
from ..guard import protected_path
from ..keys import SecretKey, key_scope
from ..restore import RESTORE_KEY, with_records
from ..sealed.stores import require_key
from ._cached_records import prepare_cached, unwrap_cache, warn_if_raw_hash_ids
from ._stored import (
    check_metadata_text,
    check_metadatas,
    check_unique_ids,
    sanitize_metadatas,
    warn_existing_ids,
)
from .chroma import (
    check_collection,
    load_query_index,
    protected_write,
    save_query_index,
    upgrade_recorded_config,
)
from .chroma_sealed import recorded_space, sealed_write
from .langchain_sealed import SealedChromaReads
from .scores import relevance_score_fn as calibrated_relevance_score_fn

__all__ = ["FAISS", "Chroma", "chroma_store", "stored_texts"]  # noqa: F822 (FAISS: lazy, module __getattr__)

_LangChainChroma: Any
try:
    from langchain_chroma import Chroma as _LangChainChroma
except ImportError:  # pragma: no cover - optional dependency
    _LangChainChroma = None


def _require_langchain_chroma() -> Any:
    if _LangChainChroma is None:  # pragma: no cover
        raise ModelNotAvailableError("langchain-chroma is not installed: pip install 'private-vectors[langchain]'")
    return _LangChainChroma


def _configuration_for(embedding: Any, configuration: Any) -> Any:
    """The collection configuration with ``embedding`` recorded and its space set (the
    caller's own ``hnsw``/``spann`` space wins; a PrivateEmbedding then warns on mismatch)."""
    if not isinstance(embedding, PrivateEmbedding):
        return configuration
    cfg: dict[str, Any] = dict(configuration or {})
    cfg.setdefault("embedding_function", embedding)
    if "spann" in cfg:
        cfg["spann"] = {"space": embedding.space, **dict(cfg["spann"] or {})}
    else:
        cfg["hnsw"] = {"space": embedding.space, **dict(cfg.get("hnsw") or {})}
    return cfg


def stored_texts(embedding: Any, texts: Sequence[str], *, store_raw_text: bool = False) -> list[str]:
    """The document text a store keeps for ``texts`` (contracts: stored text).

    ``store_raw_text=True``: the texts as given. A PrivateEmbedding decides itself (its
    sanitized text with a text stage, else nothing). Another embedding with a
    ``texts_to_store(texts)`` hook: what it returns. Else nothing: an empty string per document.

    Raises:
        InvalidParameterError: the hook returned the wrong number of texts or non-strings.
    """
    items = list(texts)
    if store_raw_text:
        return items
    if isinstance(embedding, PrivateEmbedding):
        kept = embedding.pipeline.texts_to_store(items, embedding.sanitize_documents(items)) if items else None
        return list(kept) if kept is not None else [""] * len(items)
    hook = getattr(embedding, "texts_to_store", None)
    if not callable(hook):
        return [""] * len(items)
    out = hook(items)
    if out is None:
        return [""] * len(items)
    out = list(out)
    if len(out) != len(items) or not all(isinstance(t, str) for t in out):
        raise InvalidParameterError("embedding_function.texts_to_store", f"{len(items)} strings",
                                    Described(f"{len(out)} items of types {sorted({type(t).__name__ for t in out})}"))
    return out


_Base: Any = _LangChainChroma if _LangChainChroma is not None else object


class Chroma(SealedChromaReads, _Base):
    """``langchain_chroma.Chroma`` that records the PrivateEmbedding and keeps no raw text.

    The constructor is ``langchain_chroma.Chroma``'s, parameter for parameter, plus
    ``store_raw_text``. With a :class:`~private_vectors.PrivateEmbedding` as
    ``embedding_function`` the collection is created (or opened) with the function's config
    in its Chroma ``configuration`` and in the function's space; reopening it with a
    PrivateEmbedding that differs in what stored vectors mean raises
    :class:`~private_vectors.errors.ConfigMismatchError`, and ``embedding_function=None`` on an
    existing private collection rebuilds the stored PrivateEmbedding.

    Args:
        store_raw_text: keep each ``page_content`` verbatim in the collection (default False:
            the sanitized text when the embedding function sanitizes, else an empty string;
            search results then carry ids and metadata, with empty ``page_content``).
        key: the key of a keyed collection reopened with ``embedding_function=None`` (default:
            env ``PRIVATE_VECTORS_KEY``; both given and different: an error).
        metadata_text: ``"sanitize"`` (default: string metadata values through the text stage;
            without one, kept with one PrivacyWarning per store) or ``"keep"`` (kept as given,
            for metadata you know holds no personal data).

    The other parameters are ``langchain_chroma.Chroma``'s.
    """

    def __init__(
        self,
        collection_name: str = "langchain",
        embedding_function: Any = None,
        persist_directory: str | None = None,
        host: str | None = None,
        port: int | None = None,
        headers: dict[str, str] | None = None,
        chroma_cloud_api_key: str | None = None,
        tenant: str | None = None,
        database: str | None = None,
        client_settings: Any = None,
        collection_metadata: dict | None = None,
        collection_configuration: Any = None,
        client: Any = None,
        relevance_score_fn: Callable[[float], float] | None = None,
        create_collection_if_not_exists: bool | None = True,
        *,
        ssl: bool = False,
        store_raw_text: bool = False,
        key: Any = None,
        metadata_text: str = "sanitize",
    ) -> None:
        base = _require_langchain_chroma()
        if not isinstance(store_raw_text, bool):
            raise InvalidTypeError("store_raw_text", "True or False", store_raw_text)
        if key is not None and embedding_function is not None:
            raise InvalidParameterError("key", "no key together with embedding_function (the function has its own)",
                                        Described("<a key>"))
        self._store_raw_text = store_raw_text
        self._metadata_text = check_metadata_text(metadata_text)
        embedding_function, self._vector_cache = unwrap_cache(embedding_function)
        try:
            secret = SecretKey.resolve(key, min_bytes=1)
        finally:
            del key
        self._key_given = secret is not None
        with key_scope(secret):  # a stored function rebuilt by Chroma or below takes this key (else the env's)
            self._open(base, collection_name=collection_name, embedding_function=embedding_function,
                       persist_directory=persist_directory, host=host, port=port, headers=headers,
                       chroma_cloud_api_key=chroma_cloud_api_key, tenant=tenant, database=database,
                       client_settings=client_settings, collection_metadata=collection_metadata,
                       collection_configuration=collection_configuration, client=client,
                       relevance_score_fn=relevance_score_fn,
                       create_collection_if_not_exists=create_collection_if_not_exists, ssl=ssl)

    def _open(self, base: Any, *, embedding_function: Any, collection_configuration: Any, **others: Any) -> None:
        base.__init__(
            self, embedding_function=embedding_function,
            collection_configuration=_configuration_for(embedding_function, collection_configuration), **others)
        if self._chroma_collection is not None:
            self._adopt_collection(embedding_function)

    def _adopt_collection(self, embedding_function: Any) -> None:
        """Check ``embedding_function`` against the collection; adopt the stored PrivateEmbedding
        when none was given; warn once when the collection's space is not the function's."""
        col = self._collection
        if embedding_function is None:  # a private collection: rebuild its stored function
            cfg = (col.configuration_json or {}).get("embedding_function") or {}
            if cfg.get("name") == CHROMA_NAME:
                require_key(cfg.get("config"), f"collection {col.name!r}", given=self._key_given)
                self._embedding_function = rebuild(cfg.get("config") or {}, f"collection {col.name!r}",
                                                   use_cache=False)
        else:
            check_collection(col, embedding_function)
        ef = self._embedding_function
        if isinstance(ef, PrivateEmbedding):
            load_query_index(col, ef)  # the text stage's keyed query index, when one was saved
            space = recorded_space(col)
            ef.store_space = space  # the privacy report states the space actually in use
            if space is not None and space != ef.space and ef.store_geometry == "none":
                _warn_space_once(col.name, space, ef.space)

    @property
    def store_raw_text(self) -> bool:
        """Whether ``page_content`` is stored verbatim."""
        return self._store_raw_text

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        """The caller's ``relevance_score_fn``; else, for a PrivateEmbedding, one calibrated to
        the noise of the collection's ε (:func:`~private_vectors.integrations.scores.relevance_score_fn`);
        else LangChain's choice for the collection's space."""
        ef = self._embedding_function
        if self.override_relevance_score_fn is not None or not isinstance(ef, PrivateEmbedding):
            return super()._select_relevance_score_fn()
        if self._sealer() is not None:  # exact distances: the clean relevance, thresholds after the re-rank
            return self.sealed_relevance_fn()
        return self._noisy_relevance_fn()

    def _noisy_relevance_fn(self) -> Callable[[float], float]:
        ef = self._embedding_function
        if self.override_relevance_score_fn is not None or not isinstance(ef, PrivateEmbedding):
            return super()._select_relevance_score_fn()
        space = recorded_space(self._collection) or "l2"
        measure = {"cosine": "cosine_distance", "ip": "ip_distance"}.get(space, "l2_squared")
        return calibrated_relevance_score_fn(ef, measure)

    def _metadatas_for(self, metadatas: Any, count: int) -> list[Any]:
        with protected_path():
            return sanitize_metadatas(self._embedding_function, metadatas, count,
                                      store_raw_text=self._store_raw_text, once=self,
                                      metadata_text=self._metadata_text)

    def _documents_for(self, texts: list[str]) -> list[str]:
        return stored_texts(self._embedding_function, texts, store_raw_text=self._store_raw_text)

    def add_texts(self, texts: Iterable[str], metadatas: list[dict] | None = None,
                  ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        """Embed ``texts`` through the embedding function and add them; the stored document
        text follows ``store_raw_text`` (see the class). Returns the ids.

        No texts: nothing is added. An id the collection already holds is replaced (as
        ``langchain_chroma`` does: it upserts), with a warning naming it; an id repeated within
        the batch is refused (as Chroma refuses it)."""
        items = list(texts)
        if ids is not None and isinstance(self._embedding_function, PrivateEmbedding):
            warn_if_raw_hash_ids(self, items, metadatas, ids)
        ids = [str(uuid.uuid4()) for _ in items] if ids is None else [
            i if i is not None else str(uuid.uuid4()) for i in ids]
        if len(ids) != len(items):
            raise InvalidParameterError("ids", f"{len(items)} ids (one per text)", len(ids))
        if not items:
            return []
        check_unique_ids(ids, "Chroma")
        sealer = self._sealer() if isinstance(self._embedding_function, PrivateEmbedding) else None
        as_stored = ids if sealer is None else [sealer.stored_id(i) for i in ids]  # (keyed ids when sealed so)
        held = set(self._collection.get(ids=as_stored, include=[])["ids"])
        warn_existing_ids([i for i, s in zip(ids, as_stored, strict=True) if s in held],
                          f"collection {self._collection.name!r}", "replaced (langchain_chroma's add_texts upserts)", ids)
        ef = self._embedding_function
        if ef is None and not self._store_raw_text:
            raise InvalidParameterError(
                "embedding_function", "an Embeddings (e.g. PrivateEmbedding) to embed texts before they are stored",
                None, note="without one Chroma embeds the raw text itself; pass store_raw_text=True to allow that")
        check_metadatas(metadatas, len(items))  # (refused before any work)
        rows = self._rows(items, ids, metadatas)
        with protected_write(self._collection):
            for start in range(0, len(items), self._batch_size()):
                part = {k: None if v is None else v[start:start + self._batch_size()] for k, v in rows.items()}
                if part["metadatas"] is not None and all(m is None for m in part["metadatas"]):
                    part["metadatas"] = None
                self._collection.upsert(**part)
            save_query_index(self._collection, ef)
        upgrade_recorded_config(self._collection, ef)
        return ids

    def _rows(self, items: list[str], ids: list[str], metadatas: Any) -> dict[str, Any]:
        """Chroma's upsert arguments for a batch: sealed (markers, readable metadata with the
        record, the stored ids) or clear (the stored text, its restore record under pv_restore)."""
        sealer = self._sealer() if isinstance(self._embedding_function, PrivateEmbedding) else None
        if sealer is not None:
            with protected_path():
                kw, _ = sealed_write(self._embedding_function, ids, items, None if metadatas is None else list(metadatas),
                                     sealer=sealer, store_raw_text=self._store_raw_text,
                                     sanitize_metadata=lambda m: self._metadatas_for(m, len(items)))
            return {"ids": kw["ids"], "documents": kw.get("documents"), "metadatas": kw["metadatas"],
                    "embeddings": [list(map(float, v)) for v in kw["embeddings"]]}
        documents, embeddings, records = self._documents_and_vectors(items, ids)
        metas = [m or None for m in self._metadatas_for(metadatas, len(items))]  # after: names learnt from the texts
        metas = with_records(metas, records, len(items)) or metas  # encrypted restore records (pv_restore)
        return {"ids": ids, "documents": documents, "embeddings": embeddings, "metadatas": metas}

    def _documents_and_vectors(self, items: list[str], ids: list[str]) -> tuple[list[str], Any, list[str] | None]:
        """(documents to store, vectors, restore records or None): one pass through a
        PrivateEmbedding's text stage (a keyed one also seals each document's restore record)."""
        ef = self._embedding_function
        if ef is None:
            return items, None, None
        with protected_path():  # the library's own store path: the raw-text guard stays silent
            if isinstance(ef, PrivateEmbedding):
                kept, vectors, records = prepare_cached(ef, self._vector_cache, items, ids,
                                                        store_raw_text=self._store_raw_text)
                return ((list(kept) if kept is not None else [""] * len(items)),
                        [list(map(float, v)) for v in vectors], records)
            return self._documents_for(items), ef.embed_documents(items), None

    def update_documents(self, ids: list[str], documents: list[Any]) -> None:
        """Re-embed and replace ``documents`` under ``ids`` (stored text as in :meth:`add_texts`)."""
        if self._embedding_function is None:
            raise InvalidParameterError("embedding_function", "an Embeddings to re-embed updated documents", None)
        texts = [d.page_content for d in documents]
        metas = [{k: v for k, v in (d.metadata or {}).items() if k != RESTORE_KEY} or None for d in documents]
        if self._sealer() is not None:  # sealed: the rows are sealed again (an upsert)
            self.add_texts(texts, metas, list(ids))
            return
        stored, embeddings, records = self._documents_and_vectors(texts, list(ids))
        metas = [m or None for m in self._metadatas_for(metas, len(documents))]
        metas = with_records(metas, records, len(texts)) or metas
        size = self._batch_size()
        with protected_write(self._collection):
            for start in range(0, len(ids), size):
                sl = slice(start, start + size)
                self._collection.update(ids=ids[sl], embeddings=embeddings[sl], documents=stored[sl],
                                        metadatas=metas[sl] if any(m is not None for m in metas[sl]) else None)
            save_query_index(self._collection, self._embedding_function)

    def fork(self, new_name: str) -> Chroma:
        """Fork this store (same client, embedding function and ``store_raw_text``)."""
        forked = self._collection.fork(new_name=new_name)
        return type(self)(client=self._client, embedding_function=self._embedding_function,
                          collection_name=forked.name, store_raw_text=self._store_raw_text,
                          metadata_text=self._metadata_text)

    def _batch_size(self) -> int:
        getter = getattr(self._client, "get_max_batch_size", None)
        try:
            return max(1, int(getter())) if callable(getter) else 5461
        except Exception:  # pragma: no cover - clients without the call
            return 5461


_WARNED: set[tuple[str, str, str]] = set()
# Process-wide: each reopen makes a new store object, so the space warning is once per (collection,
# space, wanted) per process (tests/test_langchain_dropin.py::
# test_plain_space_collection_warns_once_when_the_space_matters).


def _warn_space_once(name: str, space: str, wanted: str) -> None:
    key = (name, space, wanted)
    if key in _WARNED:
        return
    _WARNED.add(key)
    warnings.warn(
        f"collection {name!r} uses the {space!r} space but the PrivateEmbedding was built for {wanted!r}; "
        f"create the collection with collection_configuration={{'hnsw': {{'space': {wanted!r}}}}} (or "
        f"PrivateEmbedding(space={space!r})) so perturbed documents rank as measured", UserWarning, stacklevel=3)


def chroma_store(embedding: PrivateEmbedding, *, collection_name: str = "langchain", store_raw_text: bool = False,
                 **kwargs: Any) -> Any:
    """A drop-in :class:`Chroma` store over a collection that records ``embedding``.

    Kept for existing code: ``Chroma(collection_name=..., embedding_function=embedding)`` is the
    same store (no raw text stored unless ``store_raw_text=True``).

    Args:
        embedding: the PrivateEmbedding.
        collection_name: the Chroma collection.
        **kwargs: passed to :class:`Chroma` (``persist_directory``, ``client``, ``store_raw_text``…).

    Raises:
        ConfigMismatchError: the collection exists and was written by another PrivateEmbedding.
    """
    if not isinstance(embedding, PrivateEmbedding):
        raise InvalidTypeError("embedding", "a PrivateEmbedding", embedding)
    _require_langchain_chroma()
    return Chroma(collection_name=collection_name, embedding_function=embedding, store_raw_text=store_raw_text,
                  **kwargs)


def __getattr__(name: str) -> Any:
    """``FAISS`` on first use (langchain_community is imported only when it is asked for)."""
    if name == "FAISS":
        from .langchain_faiss import FAISS

        return FAISS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
