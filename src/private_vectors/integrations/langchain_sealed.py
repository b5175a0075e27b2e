"""The LangChain drop-in ``Chroma`` over a sealed collection: the key holder's reads and deletes.

Mixed into :class:`private_vectors.integrations.langchain.Chroma`: on a sealed collection
(:mod:`~private_vectors.integrations.chroma_sealed`) each method opens the sealed records and
returns what an unsealed store returns (``page_content`` the sanitized text, ``metadata`` the
document's with ``pv_restore``), never a marker or a record; on any other collection it is
``langchain_chroma.Chroma``'s.

* ``similarity_search``, ``similarity_search_with_score``, ``similarity_search_with_relevance_scores``
  and the retrievers: K noisy candidates fetched in one query, re-ranked by the exact vectors;
  distances are exact and relevance scores the clean ones, so score thresholds apply after the
  re-rank.
* ``max_marginal_relevance_search``: MMR on the exact vectors of the ``fetch_k`` re-ranked candidates.
* ``similarity_search_by_vector`` (and ``..._with_relevance_scores``): the given vector is a
  store-space query with no clean counterpart, so the results come in the store's (noisy) order,
  opened; ``max_marginal_relevance_search_by_vector`` and ``hybrid_search`` are refused.
* ``get_by_ids``, ``delete`` (records, query-index entries, keyring keys) and ``update_documents``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import Described, InvalidParameterError
from ..sealed.rerank import mmr
from ..sealed.stores import exact_relevance, record_of
from .chroma import protected_write, save_query_index
from .chroma_sealed import (
    check_where,
    collection_space,
    delete_sealed,
    get_sealed,
    key_holder_metadata,
    query_sealed,
    sealer_of,
)

__all__ = ["SealedChromaReads"]


def _document(payload_text: Any, metadata: Any, doc_id: str) -> Any:
    from langchain_core.documents import Document

    return Document(page_content=payload_text or "", metadata=metadata or {}, id=doc_id)


class SealedChromaReads:
    """The sealed-collection methods of the drop-in ``Chroma`` (see the module docstring)."""

    _collection: Any
    _embedding_function: Any

    def _sealer(self) -> Any:
        """The collection's Sealer when it is sealed (its PrivateEmbedding checked for a key), else None."""
        return sealer_of(self._collection, self._embedding_function)

    def _sealed_results(self, sealer: Any, query: str, k: int, filter: Any, where_document: Any, *,
                        with_vectors: bool = False, candidates: Any = "auto") -> dict[str, Any]:
        check_where(filter, where_document, sealer)
        return query_sealed(self._collection, self._embedding_function, sealer, [query], k, filter,
                            candidates=candidates, with_vectors=with_vectors)

    def sealed_relevance_fn(self) -> Callable[[float], float]:
        """Relevance from an exact distance in the collection's space (the clean cosine)."""
        space = collection_space(self._collection, self._embedding_function)
        return lambda distance: exact_relevance(distance, space)

    # -- searches ---------------------------------------------------------------------------
    def similarity_search_with_score(self, query: str, k: int = 4, filter: Any = None, where_document: Any = None,
                                     **kwargs: Any) -> list[tuple[Any, float]]:
        """Documents and exact distances (sealed: re-ranked; see the module docstring)."""
        sealer = self._sealer()
        if sealer is None:
            return super().similarity_search_with_score(query, k, filter=filter,  # type: ignore[misc]
                                                        where_document=where_document, **kwargs)
        res = self._sealed_results(sealer, query, k, filter, where_document, candidates=kwargs.get("candidates", "auto"))
        return [(_document(t, m, i), d) for i, t, m, d in zip(res["ids"][0], res["documents"][0], res["metadatas"][0],
                                                             res["distances"][0], strict=True)]

    def similarity_search_with_vectors(self, query: str, k: int = 4, filter: Any = None,
                                       where_document: Any = None, **kwargs: Any) -> list[tuple[Any, np.ndarray]]:
        """Documents and their vectors (sealed: the exact vectors of the re-ranked results)."""
        sealer = self._sealer()
        if sealer is None:
            return super().similarity_search_with_vectors(query, k, filter=filter,  # type: ignore[misc]
                                                          where_document=where_document, **kwargs)
        res = self._sealed_results(sealer, query, k, filter, where_document, with_vectors=True)
        return [(_document(t, m, i), np.asarray(v)) for i, t, m, v in zip(
            res["ids"][0], res["documents"][0], res["metadatas"][0], res["exact"][0], strict=True)]

    def max_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
                                      filter: Any = None, where_document: Any = None, **kwargs: Any) -> list[Any]:
        """MMR (sealed: on the exact vectors of the ``fetch_k`` re-ranked candidates)."""
        sealer = self._sealer()
        if sealer is None:
            return super().max_marginal_relevance_search(query, k, fetch_k, lambda_mult=lambda_mult,  # type: ignore[misc]
                                                         filter=filter, where_document=where_document, **kwargs)
        res = self._sealed_results(sealer, query, max(int(fetch_k), int(k)), filter, where_document,
                                   with_vectors=True)
        if not res["ids"][0]:
            return []
        chosen = mmr(res["query"][0], np.stack(res["exact"][0]), int(k), lambda_mult)
        return [_document(res["documents"][0][j], res["metadatas"][0][j], res["ids"][0][j]) for j in chosen]

    def _by_vector(self, sealer: Any, embedding: Sequence[float], k: int, filter: Any,
                   where_document: Any) -> list[tuple[Any, float]]:
        check_where(filter, where_document, sealer)
        res = self._collection.query(query_embeddings=[list(map(float, embedding))], n_results=k, where=filter or None,
                                     include=["metadatas", "distances"])
        ids, metas = res["ids"][0], (res["metadatas"] or [[]])[0]
        opened = sealer.open_many(ids, [record_of(m, f"collection {self._collection.name!r}") for m in metas])
        return [(_document(p.text, key_holder_metadata(p), p.doc_id), float(d))
                for p, d in zip(opened, res["distances"][0], strict=True)]

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4, filter: Any = None,
                                    where_document: Any = None, **kwargs: Any) -> list[Any]:
        """Documents nearest a store-space vector (sealed: opened, in the store's noisy order)."""
        sealer = self._sealer()
        if sealer is None:
            return super().similarity_search_by_vector(embedding, k, filter=filter,  # type: ignore[misc]
                                                       where_document=where_document, **kwargs)
        return [doc for doc, _ in self._by_vector(sealer, embedding, k, filter, where_document)]

    def similarity_search_by_vector_with_relevance_scores(self, embedding: list[float], k: int = 4,
                                                          filter: Any = None, where_document: Any = None,
                                                          **kwargs: Any) -> list[tuple[Any, float]]:
        """As :meth:`similarity_search_by_vector`, with the store's (noise-calibrated) relevance."""
        sealer = self._sealer()
        if sealer is None:
            return super().similarity_search_by_vector_with_relevance_scores(  # type: ignore[misc]
                embedding, k, filter=filter, where_document=where_document, **kwargs)
        score = self._noisy_relevance_fn()
        return [(doc, score(d)) for doc, d in self._by_vector(sealer, embedding, k, filter, where_document)]

    def _noisy_relevance_fn(self) -> Callable[[float], float]:  # pragma: no cover - overridden by Chroma
        return lambda d: d

    def max_marginal_relevance_search_by_vector(self, embedding: list[float], *args: Any, **kwargs: Any) -> list[Any]:
        """Refused on a sealed collection (MMR needs the clean query: pass the query text)."""
        if self._sealer() is None:
            return super().max_marginal_relevance_search_by_vector(embedding, *args, **kwargs)  # type: ignore[misc]
        raise InvalidParameterError("embedding", "a query text: on a sealed collection use "
                                    "max_marginal_relevance_search(query), which runs MMR on the exact vectors",
                                    Described("<a vector>"))

    def hybrid_search(self, search: Any) -> list[Any]:
        """Refused on a sealed collection (full-text and hybrid search need the text in clear)."""
        if self._sealer() is None:
            return super().hybrid_search(search)  # type: ignore[misc]
        raise InvalidParameterError("search", "a similarity search: a sealed collection keeps keyed markers, its "
                                    "text is sealed", Described("<a hybrid search>"),
                                    note="full-text, BM25 and hybrid search need a collection written with seal=False")

    # -- by id ------------------------------------------------------------------------------
    def get_by_ids(self, ids: Sequence[str], /) -> list[Any]:
        """Documents by id (sealed: opened; ids missing from the collection are left out)."""
        sealer = self._sealer()
        if sealer is None:
            return super().get_by_ids(ids)  # type: ignore[misc]
        got = get_sealed(self._collection, sealer, list(ids), None, None, None)
        return [_document(t, m, i) for i, t, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)]

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> None:
        """Delete by id (sealed: rows, records, unreferenced query-index entries, keyring keys)."""
        sealer = self._sealer()
        if sealer is None:
            return super().delete(ids=ids, **kwargs)  # type: ignore[misc]
        if ids is None or kwargs:
            raise InvalidParameterError("ids", "the ids to delete (a sealed collection cannot delete by filter)",
                                        Described("<none>" if ids is None else "<ids and a filter>"))
        with protected_write(self._collection):
            delete_sealed(self._collection, self._embedding_function, sealer, list(ids))
            save_query_index(self._collection, self._embedding_function)
        return None
