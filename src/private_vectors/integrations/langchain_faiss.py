"""A drop-in for ``langchain_community``'s FAISS vector store that keeps no raw text and no pickle.

The plain ``langchain_community.vectorstores.FAISS``

- keeps every ``page_content`` verbatim in its docstore, and ``save_local`` pickles that docstore
  into ``index.pkl`` (loading it runs arbitrary code from the file: ``allow_dangerous_deserialization``);
- records nothing about the embedding, so a store written at ε = 10 loads with an ε = 20
  embedding, or with another key, without complaint.

:class:`FAISS` here is a subclass used the same way, only the import changes::

    from private_vectors.langchain import FAISS       # was: from langchain_community.vectorstores import FAISS
    store = FAISS.from_texts(texts, PrivateEmbedding(concept="PII", eps=10))
    store.save_local("folder")                        # index.faiss + index.json, no pickle
    store = FAISS.load_local("folder", key=...)       # the stored PrivateEmbedding, checked key

With a PrivateEmbedding each text is sanitized once (``PrivateEmbedding.prepare_documents``):
that sanitized text is embedded and is the ``page_content`` kept; without a text stage an empty
``page_content`` is kept unless ``store_raw_text=True``. String metadata values go through the
same text stage. ``save_local`` writes ``<index_name>.faiss`` (``faiss.write_index``) and
``<index_name>.json`` (documents, ids, the PrivateEmbedding config with its key check, the
text stage's keyed query index); ``load_local`` reads those two files only and refuses a
conflicting PrivateEmbedding or a wrong key with
:class:`~private_vectors.errors.ConfigMismatchError`. The distance follows the embedding's
space (``ip``/``cosine`` → inner product, ``l2`` → Euclidean) and relevance scores are
calibrated to the stored noise (:mod:`private_vectors.integrations.scores`).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .._files import TMP, commit_pair, fsync_path
from ..config import check_config_compatible
from ..embedding import PrivateEmbedding
from ..errors import (
    ArtefactError,
    Described,
    InvalidParameterError,
    InvalidTypeError,
    ModelNotAvailableError,
)
from ..guard import protected_path
from ..restore import with_records
from ..sealed.stores import exact_relevance, seal_rows, sealer_of
from ._cached_records import prepare_cached, unwrap_cache, warn_if_raw_hash_ids
from ._stored import (
    check_metadata_text,
    check_metadatas,
    check_unique_ids,
    positions,
    sanitize_metadatas,
    stored_embedding,
)
from .scores import relevance_score_fn as calibrated_relevance_score_fn

try:
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS as _CommunityFAISS  # noqa: N811
    from langchain_community.vectorstores.utils import DistanceStrategy
    from langchain_core.documents import Document
except ImportError as exc:  # pragma: no cover - optional dependency
    raise ModelNotAvailableError("the LangChain FAISS drop-in needs langchain-community and faiss-cpu: "
                                 "pip install 'private-vectors[langchain,faiss]'") from exc

__all__ = ["FAISS", "FORMAT"]

FORMAT = "private_vectors.langchain_faiss/1"


def _strategy_for(embedding: Any) -> Any:
    space = getattr(embedding, "space", None)
    return DistanceStrategy.EUCLIDEAN_DISTANCE if space == "l2" or space is None else DistanceStrategy.MAX_INNER_PRODUCT


def _new_index(dim: int, strategy: Any) -> Any:
    import faiss

    return faiss.IndexFlatIP(dim) if strategy == DistanceStrategy.MAX_INNER_PRODUCT else faiss.IndexFlatL2(dim)


class FAISS(_CommunityFAISS):  # type: ignore[misc]
    """``langchain_community`` FAISS that keeps sanitized text only and saves without pickle.

    Same constructor as ``langchain_community.vectorstores.FAISS`` plus ``store_raw_text``
    (default False: the sanitized text when the embedding sanitizes, else an empty
    ``page_content``) and ``metadata_text`` (``"sanitize"``, the default: string metadata
    values through the text stage; ``"keep"``: as given). Build it with :meth:`from_texts` /
    :meth:`from_documents`, or :meth:`empty`.
    """

    def __init__(self, embedding_function: Any, index: Any, docstore: Any, index_to_docstore_id: dict[int, str],
                 relevance_score_fn: Callable[[float], float] | None = None, normalize_L2: bool = False,
                 distance_strategy: Any = None, *, store_raw_text: bool = False,
                 metadata_text: str = "sanitize") -> None:
        if not isinstance(store_raw_text, bool):
            raise InvalidTypeError("store_raw_text", "True or False", store_raw_text)
        embedding_function, self._vector_cache = unwrap_cache(embedding_function)
        if distance_strategy is None:
            distance_strategy = _strategy_for(embedding_function)
        super().__init__(embedding_function, index, docstore, index_to_docstore_id,
                         relevance_score_fn=relevance_score_fn, normalize_L2=normalize_L2,
                         distance_strategy=distance_strategy)
        self.store_raw_text = store_raw_text
        self.metadata_text = check_metadata_text(metadata_text)
        self._sealer = None
        if isinstance(embedding_function, PrivateEmbedding):
            embedding_function.get_config()  # a keyed embedding fixes its random salt now (recorded on save)
            self._sealer = sealer_of(embedding_function)  # sealed: markers + records (langchain_faiss_sealed)

    @property
    def sealed(self) -> bool:
        """Whether this store seals (a keyed PrivateEmbedding, ``seal`` not False): the docstore
        keeps markers and sealed records, searches re-rank by the exact vectors."""
        return self._sealer is not None

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(documents={len(self.index_to_docstore_id)}, "
                f"distance_strategy={str(self.distance_strategy.value)!r}, embedding={self.embedding_function!r}, "
                f"store_raw_text={self.store_raw_text})")

    # -- construction -----------------------------------------------------------------------------
    @classmethod
    def empty(cls, embedding: Any, *, store_raw_text: bool = False, **kwargs: Any) -> FAISS:
        """An empty store for ``embedding`` (a PrivateEmbedding: its ``out_dim`` and space)."""
        private, _ = unwrap_cache(embedding)
        if not isinstance(private, PrivateEmbedding):
            raise InvalidTypeError("embedding", "a PrivateEmbedding (FAISS.empty needs its dimension)", embedding)
        strategy = kwargs.pop("distance_strategy", None) or _strategy_for(private)
        return cls(embedding, _new_index(private.out_dim, strategy), InMemoryDocstore(), {},
                   distance_strategy=strategy, store_raw_text=store_raw_text, **kwargs)

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Any, metadatas: list[dict] | None = None,
                   ids: list[str] | None = None, **kwargs: Any) -> FAISS:
        """Sanitize, embed and store ``texts`` in a new store (see the class)."""
        store_raw_text = kwargs.pop("store_raw_text", False)
        if not isinstance(unwrap_cache(embedding)[0], PrivateEmbedding):
            kwargs.pop("metadata_text", None)
            if not store_raw_text:
                raise InvalidTypeError("embedding", "a PrivateEmbedding (or store_raw_text=True)", embedding)
            return super().from_texts(texts, embedding, metadatas=metadatas, ids=ids, store_raw_text=True, **kwargs)
        store = cls.empty(embedding, store_raw_text=store_raw_text, **kwargs)  # (metadata_text in kwargs)
        store.add_texts(texts, metadatas=metadatas, ids=ids)
        return store

    @classmethod
    async def afrom_texts(cls, texts: list[str], embedding: Any, metadatas: list[dict] | None = None,
                          ids: list[str] | None = None, **kwargs: Any) -> FAISS:
        return await asyncio.get_running_loop().run_in_executor(
            None, lambda: cls.from_texts(texts, embedding, metadatas=metadatas, ids=ids, **kwargs))

    @classmethod
    def from_embeddings(cls, text_embeddings: Iterable[tuple[str, list[float]]], embedding: Any,
                        metadatas: Iterable[dict] | None = None, ids: list[str] | None = None,
                        **kwargs: Any) -> FAISS:
        """Refused: vectors embedded elsewhere did not go through the PrivateEmbedding."""
        raise InvalidParameterError("text_embeddings", "texts, embedded by the store's PrivateEmbedding "
                                    "(FAISS.from_texts)", Described("precomputed embeddings"),
                                    note="vectors computed elsewhere carry no noise and their texts no sanitizing")

    # -- adding -----------------------------------------------------------------------------------
    def add_texts(self, texts: Iterable[str], metadatas: list[dict] | None = None, ids: list[str] | None = None,
                  **kwargs: Any) -> list[str]:
        """Sanitize once, embed, and add; the kept ``page_content`` follows ``store_raw_text``.

        No texts: nothing is added. An id already in the store, or repeated within the batch,
        is refused, naming it (as ``langchain_community``'s FAISS refuses it)."""
        items = list(texts)
        ef = self.embedding_function
        if not isinstance(ef, PrivateEmbedding):
            if not self.store_raw_text:
                raise InvalidTypeError("embedding_function", "a PrivateEmbedding (or store_raw_text=True)", ef)
            return super().add_texts(items, metadatas=metadatas, ids=ids, **kwargs)
        if ids is not None and len(list(ids)) != len(items):
            raise InvalidParameterError("ids", f"{len(items)} ids (one per text)", len(list(ids)))
        if ids is not None:
            warn_if_raw_hash_ids(self, items, metadatas, ids)
        ids = [str(uuid.uuid4()) for _ in items] if ids is None else [str(i) for i in ids]
        if not items:
            return []
        check_unique_ids(ids, "langchain_community's FAISS")
        held = set(self.index_to_docstore_id.values())
        keys = [self._sealer.stored_id(i) for i in ids] if self._sealer is not None else ids
        existing = [n for n, i in enumerate(keys) if i in held]
        if existing:  # langchain_community's FAISS refuses them too
            raise InvalidParameterError("ids", "ids not already in the store (langchain_community's FAISS refuses "
                                        "one it holds; delete it first)", Described(positions(existing, "held")))
        check_metadatas(metadatas, len(items))  # (refused before any work)
        if self._sealer is not None:
            return self._add_sealed(items, metadatas, ids)
        with protected_path():  # the library's own store path: the raw-text guard stays silent
            kept, vectors, records = prepare_cached(ef, self._vector_cache, items, ids,
                                                    store_raw_text=self.store_raw_text)
            metas = sanitize_metadatas(ef, metadatas, len(items), store_raw_text=self.store_raw_text,
                                       once=self, metadata_text=self.metadata_text)
        kept = list(kept) if kept is not None else [""] * len(items)
        metas = [m or {} for m in (with_records(metas, records, len(items)) or metas)]  # + encrypted restore records
        return super().add_embeddings(zip(kept, np.asarray(vectors).tolist(), strict=True), metadatas=metas, ids=ids)

    def _add_sealed(self, items: list[str], metadatas: list[dict] | None, ids: list[str]) -> list[str]:
        """A sealed add: the record holds the kept text, metadata, restore record, exact vector."""
        from ._sealed_prepare import prepare_sealed

        ef = self.embedding_function
        with protected_path():
            got = prepare_sealed(ef, items, ids, store_raw_text=self.store_raw_text)
            metas = sanitize_metadatas(ef, metadatas, len(items), store_raw_text=self.store_raw_text,
                                       once=self, metadata_text=self.metadata_text)
        rows = seal_rows(self._sealer, ids, texts=got.kept, metadatas=metas, vectors=got.exact,
                         restores=got.restores, refs=got.refs)
        super().add_embeddings(zip(rows.markers, got.vectors.tolist(), strict=True), metadatas=rows.metadatas,
                               ids=rows.stored_ids)
        return ids

    async def aadd_texts(self, texts: Iterable[str], metadatas: list[dict] | None = None,
                         ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        items = list(texts)
        return await asyncio.get_running_loop().run_in_executor(
            None, lambda: self.add_texts(items, metadatas=metadatas, ids=ids))

    def add_embeddings(self, text_embeddings: Iterable[tuple[str, list[float]]], metadatas: list[dict] | None = None,
                       ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        """Refused unless ``store_raw_text=True``: vectors embedded elsewhere skipped the noise."""
        if not self.store_raw_text:
            raise InvalidParameterError("text_embeddings", "texts added with add_texts (embedded by the store's "
                                        "PrivateEmbedding)", Described("precomputed embeddings"),
                                        note="vectors computed elsewhere carry no noise and their texts no sanitizing")
        return super().add_embeddings(text_embeddings, metadatas=metadatas, ids=ids, **kwargs)

    def merge_from(self, target: Any) -> None:
        """Merge another drop-in store written with the same PrivateEmbedding configuration.

        Raises:
            InvalidTypeError: ``target`` is not this drop-in (a plain FAISS store keeps raw text).
            ConfigMismatchError: ``target`` was written with another configuration.
        """
        if not isinstance(target, FAISS):
            raise InvalidTypeError("target", "a private_vectors.langchain.FAISS store", target)
        mine, theirs = self.embedding_function, target.embedding_function
        if isinstance(mine, PrivateEmbedding) and isinstance(theirs, PrivateEmbedding):
            check_config_compatible(mine.get_config(), theirs.get_config())
        mine_s, theirs_s = getattr(self, "_sealer", None), getattr(target, "_sealer", None)
        if (mine_s is None) != (theirs_s is None) or (mine_s is not None and mine_s.store != theirs_s.store):
            raise InvalidParameterError("target", "a store sealed under this store's data key (or both unsealed)",
                                        Described("a store sealed otherwise" if theirs_s is not None else "an unsealed store"),
                                        note="a sealed record opens only in the store it was sealed for")
        if target.store_raw_text and not self.store_raw_text:
            raise InvalidParameterError("target", "a store without raw text (store_raw_text=False)",
                                        Described("a store with store_raw_text=True"))
        super().merge_from(target)

    # -- the key holder's reads of a sealed store (langchain_faiss_sealed) --------------------------
    def _embed_query(self, text: str) -> list[float]:
        """The vector the store is sent; a sealed store's carries the clean query vector too
        (``.clean``), so every search path of ``langchain_community`` re-ranks by it."""
        if self._sealer is None:
            return super()._embed_query(text)
        from .langchain_faiss_sealed import SentQuery

        sent, clean = self.embedding_function.pipeline.embed_queries([text], exact=True)
        return SentQuery(sent[0].tolist(), clean[0])

    async def _aembed_query(self, text: str) -> list[float]:
        if self._sealer is None:
            return await super()._aembed_query(text)
        return await asyncio.get_running_loop().run_in_executor(None, self._embed_query, text)

    def similarity_search_with_score_by_vector(self, embedding: list[float], k: int = 4, filter: Any = None,
                                               fetch_k: int = 20, **kwargs: Any) -> list[tuple[Document, float]]:
        """As ``langchain_community``'s (every similarity search ends here). A sealed store
        fetches K noisy candidates, re-ranks them by the exact vectors (scores: exact inner
        product, or squared L2 for an L2 store; ``score_threshold`` applied after the re-rank)
        and returns the sanitized text; ``filter`` on readable keys only. A vector given by the
        caller is the one the store is sent (``embed_query``'s); the re-rank uses its first
        ``dim`` coordinates, the clean query when the query policy is ``"clean"``."""
        if self._sealer is None:
            return super().similarity_search_with_score_by_vector(embedding, k, filter=filter, fetch_k=fetch_k,
                                                                  **kwargs)
        from .langchain_faiss_sealed import sealed_scored

        return sealed_scored(self, embedding, getattr(embedding, "clean", None), k, filter=filter, fetch_k=fetch_k,
                             **kwargs)

    def max_marginal_relevance_search_with_score_by_vector(self, embedding: list[float], *, k: int = 4,
                                                           fetch_k: int = 20, lambda_mult: float = 0.5,
                                                           filter: Any = None) -> list[tuple[Document, float]]:
        """As ``langchain_community``'s (every MMR search ends here); a sealed store runs MMR on
        the exact vectors of the ``fetch_k`` nearest candidates by exact distance."""
        if self._sealer is None:
            return super().max_marginal_relevance_search_with_score_by_vector(
                embedding, k=k, fetch_k=fetch_k, lambda_mult=lambda_mult, filter=filter)
        from .langchain_faiss_sealed import sealed_mmr

        return sealed_mmr(self, embedding, getattr(embedding, "clean", None), k=k, fetch_k=fetch_k,
                          lambda_mult=lambda_mult, filter=filter)

    def get_by_ids(self, ids: Any, /) -> list[Document]:
        """As ``langchain_community``'s; a sealed store's documents opened (sanitized text)."""
        if self._sealer is None:
            return super().get_by_ids(ids)
        from .langchain_faiss_sealed import sealed_by_ids

        return sealed_by_ids(self, list(ids))

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """As ``langchain_community``'s; in a sealed store also the documents' query-index entries
        no remaining document holds and, with a keyring, their document keys."""
        if self._sealer is None or ids is None:
            return super().delete(ids, **kwargs)
        from .langchain_faiss_sealed import sealed_delete

        return super().delete(sealed_delete(self, list(ids)), **kwargs)

    # -- scores -----------------------------------------------------------------------------------
    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        """The caller's ``relevance_score_fn``; else one calibrated to the stored noise (a sealed
        store's scores are exact: the clean cosine for unit vectors)."""
        ef = self.embedding_function
        if self.override_relevance_score_fn is not None or not isinstance(ef, PrivateEmbedding):
            return super()._select_relevance_score_fn()
        if self._sealer is not None:
            space = "l2" if self.distance_strategy == DistanceStrategy.EUCLIDEAN_DISTANCE else "ip"
            return lambda score: exact_relevance(score if space == "l2" else 1.0 - float(score), space)
        if self.distance_strategy == DistanceStrategy.MAX_INNER_PRODUCT:
            return calibrated_relevance_score_fn(ef, "inner_product")
        if self.distance_strategy == DistanceStrategy.EUCLIDEAN_DISTANCE:
            return calibrated_relevance_score_fn(ef, "l2_squared")
        return super()._select_relevance_score_fn()

    # -- persistence ------------------------------------------------------------------------------
    def _sidecar(self) -> dict[str, Any]:
        ef = self.embedding_function
        documents = []
        for position in sorted(self.index_to_docstore_id):
            doc_id = self.index_to_docstore_id[position]
            doc = self.docstore.search(doc_id)
            if not isinstance(doc, Document):
                raise ArtefactError(f"document {doc_id!r} is missing from the docstore")
            documents.append({"id": doc_id, "page_content": doc.page_content, "metadata": doc.metadata})
        return {
            "format": FORMAT,
            "embedding": ef.get_config() if isinstance(ef, PrivateEmbedding) else None,
            "distance_strategy": str(self.distance_strategy.value),
            "normalize_L2": bool(self._normalize_L2),
            "store_raw_text": self.store_raw_text,
            "metadata_text": self.metadata_text,
            "documents": documents,
            "query_index": ef.pipeline.query_index_state() if isinstance(ef, PrivateEmbedding) else None,
        }

    def save_local(self, folder_path: str, index_name: str = "index") -> None:
        """Write ``<index_name>.faiss`` and ``<index_name>.json`` into ``folder_path`` (no pickle).

        Both files are written to ``*.tmp``, synced, then moved into place (index first).

        Raises:
            InvalidParameterError: a metadata value JSON cannot hold.
        """
        import faiss

        path = Path(folder_path)
        path.mkdir(parents=True, exist_ok=True)
        try:
            sidecar = json.dumps(self._sidecar(), ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError("metadata", "JSON values (str, number, bool, None, lists, dicts)",
                                        Described(type(exc).__name__), note=str(exc)) from None
        index_tmp, json_tmp = path / f"{index_name}.faiss{TMP}", path / f"{index_name}.json{TMP}"
        faiss.write_index(self.index, str(index_tmp))
        fsync_path(index_tmp)
        json_tmp.write_text(sidecar, encoding="utf-8")
        fsync_path(json_tmp)
        commit_pair(path, f"{index_name}.faiss", f"{index_name}.json")

    @classmethod
    def load_local(cls, folder_path: str, embeddings: Any = None, index_name: str = "index", *,
                   key: Any = None, allow_dangerous_deserialization: bool = False, seal: Any = None,
                   **kwargs: Any) -> FAISS:
        """Load a store saved by :meth:`save_local` (JSON and a FAISS index; no pickle is read).

        Args:
            folder_path: the folder.
            embeddings: a PrivateEmbedding (or a ``CacheBackedEmbeddings`` over one) to check
                against the stored one; None rebuilds the stored PrivateEmbedding (its key from ``key`` or ``PRIVATE_VECTORS_KEY``).
            index_name: the files' stem.
            key: the key of a keyed store when ``embeddings`` is None (checked).
            allow_dangerous_deserialization: ignored (nothing here deserializes code).
            seal: a sealed store's keyring when ``embeddings`` is None (``Sealing(keyring=...)``).

        Raises:
            ArtefactError: missing, foreign or inconsistent files (an ``index.pkl`` alone is refused).
            ConfigMismatchError: another configuration or another key than the store was written with.
            SealedStoreError: naming ``key``, for a sealed store and no key.
        """
        import faiss

        path = Path(folder_path)
        json_file, index_file = path / f"{index_name}.json", path / f"{index_name}.faiss"
        try:
            sidecar = json.loads(json_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ArtefactError(f"{path}: no readable {json_file.name} ({type(exc).__name__}); a store saved by "
                                "langchain_community's FAISS (index.pkl) is not loaded: it would unpickle") from None
        if not isinstance(sidecar, dict) or sidecar.get("format") != FORMAT:
            raise ArtefactError(f"{json_file}: not a private_vectors FAISS store (format "
                                f"{sidecar.get('format') if isinstance(sidecar, dict) else None!r})")
        wrapper = embeddings
        given, cache = unwrap_cache(embeddings)  # a CacheBackedEmbeddings: its PrivateEmbedding is checked
        where = f"FAISS store {str(path)!r}"
        embeddings = _bind_embedding(sidecar.get("embedding"), given, key, where, seal)
        try:
            index = faiss.read_index(str(index_file))
        except Exception as exc:
            raise ArtefactError(f"{index_file}: not a readable FAISS index ({type(exc).__name__})") from None
        documents = sidecar.get("documents") or []
        if index.ntotal != len(documents):
            raise ArtefactError(f"{index_file} holds {index.ntotal} vectors, {json_file.name} {len(documents)} "
                                "documents: the two files come from different saves")
        docstore = InMemoryDocstore({d["id"]: Document(id=d["id"], page_content=d["page_content"],
                                                       metadata=d.get("metadata") or {}) for d in documents})
        store = cls(embeddings if cache is None else wrapper, index, docstore,
                    {n: d["id"] for n, d in enumerate(documents)},
                    normalize_L2=bool(sidecar.get("normalize_L2", False)),
                    distance_strategy=DistanceStrategy(sidecar["distance_strategy"]),
                    store_raw_text=bool(sidecar.get("store_raw_text", False)),
                    metadata_text=sidecar.get("metadata_text", "sanitize"), **kwargs)
        if isinstance(embeddings, PrivateEmbedding):
            embeddings.pipeline.load_query_index_state(sidecar.get("query_index"))
        return store

    def serialize_to_bytes(self) -> bytes:
        """Refused: LangChain's byte form is a pickle. Use :meth:`save_local`."""
        raise InvalidParameterError("serialize_to_bytes", "save_local(folder) (JSON + FAISS index)", Described("a pickle"),
                                    note="the byte form of langchain_community's FAISS is a pickle")

    @classmethod
    def deserialize_from_bytes(cls, serialized: bytes, embeddings: Any, **kwargs: Any) -> FAISS:
        """Refused: LangChain's byte form is a pickle (loading it runs code). Use :meth:`load_local`."""
        raise InvalidParameterError("serialized", "a folder written by save_local (load_local)", Described("pickled bytes"),
                                    note="unpickling runs code from the data")


def _bind_embedding(stored: Any, given: Any, key: Any, where: str, seal: Any = None) -> Any:
    """The embedding for a loaded store: ``given`` checked against ``stored`` (config and key),
    or ``stored`` rebuilt with ``key`` / ``PRIVATE_VECTORS_KEY`` (and ``seal``)."""
    if stored is None:
        if given is None:
            raise ArtefactError(f"{where} records no PrivateEmbedding: pass embeddings=")
        return given
    return stored_embedding(stored, where, given, key, parameter="embeddings", seal=seal)
