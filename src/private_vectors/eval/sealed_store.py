"""The harness's sealed store: what a sealed Chroma collection keeps, and the key holder's search.

Written with the library's own sealing (:class:`~private_vectors.sealed.Sealer`): per document
one AEAD record holding what a clear store keeps readable (the sanitized text) and the exact
vector (after erasure, before noise), in the record's metadata key
(:data:`~private_vectors.sealed.SEALED_KEY`); the keyed marker in the ``documents`` field; the
noisy vector the only searchable cleartext. The vectors an attacker reads are exactly the clear
store's (same key, same keyed noise), and what it reads as text is the markers and the records'
ciphertext.

The key holder's search (:meth:`SealedStore.search`) is the sealed read path: the store's query
vector fetches K = :func:`~private_vectors.sealed.candidate_count` noisy candidates in one
query, their records are opened and :func:`~private_vectors.sealed.rerank.rerank` orders them by
the exact vectors against the clean query vector, in the collection's space.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .store import DEFAULT_EF_SEARCH, VectorStore, _chain_hash, sanitize_once

__all__ = ["SealedStore"]


class SealedStore(VectorStore):
    """A sealed Chroma collection written and searched through the library's sealing (see the module docstring).

    Args:
        embedding: a sealed PrivateEmbedding (a key; ``seal=None`` or ``True``).
        ef_search: the collection's HNSW search breadth.
        client, name: a Chroma client and collection name (default: an in-memory client, a fresh name).
    """

    kind = "sealed"

    def __init__(self, embedding: Any, *, ef_search: int = DEFAULT_EF_SEARCH, client: Any = None,
                 name: str | None = None) -> None:
        from ..sealed import Sealer

        super().__init__(embedding, "chroma", ef_search=ef_search, client=client, name=name)
        self._sealer = Sealer.for_embedding(embedding)
        self._space = embedding.default_space()
        self._n = 0
        self.candidates: int | None = None
        """K of the last search (the noisy candidates fetched per query)."""

    def add(self, ids: Sequence[str], texts: Sequence[str], batch: int = 1000) -> None:
        """Sanitize once (memoised, as the clear store), seal what a clear store keeps readable with the
        exact vector, store marker + record + noisy vector."""
        from ..integrations.chroma import protected_write
        from ..sealed import SEALED_KEY

        if self.doc_transform is not None:
            raise ValueError("doc_transform: a sealed store seals the library's own text stage only")
        pipeline = self.embedding.pipeline
        for s in range(0, len(texts), batch):
            i, t = list(ids[s:s + batch]), list(texts[s:s + batch])
            sanitized = sanitize_once(self.embedding, t, self._chain)
            self._chain = _chain_hash(self._chain, t)
            kept = pipeline.texts_to_store(t, sanitized) or [None] * len(t)
            noisy, exact = pipeline.embed_sanitized(sanitized, raw=t, exact=True)
            records = self._sealer.seal_many(i, texts=kept, metadatas=None, vectors=exact)
            with protected_write(self._col):  # as the library's paths: no heap bytes left in the index files
                self._col.add(ids=[self._sealer.stored_id(x) for x in i], embeddings=noisy,
                              documents=[self._sealer.marker(k) for k in kept],
                              metadatas=[{SEALED_KEY: r} for r in records])
            self._n += len(i)

    def stored_texts(self, ids: Sequence[str]) -> list[str | None]:
        """What the store keeps readable of ``ids``: the ``documents`` value and every metadata value."""
        got: dict[str, str] = {}
        ids = list(ids)
        for s in range(0, len(ids), 2000):
            res = self._col.get(ids=[self._sealer.stored_id(x) for x in ids[s:s + 2000]],
                                include=["documents", "metadatas"])
            for sid, doc, meta in zip(res["ids"], res["documents"] or [], res["metadatas"] or [], strict=True):
                got[sid] = "\n".join(str(v) for v in [doc, *(meta or {}).values()] if v)
        return [got.get(self._sealer.stored_id(i)) or None for i in ids]

    def search(self, queries: Sequence[str], k: int) -> list[dict[str, float]]:
        """The key holder's top ``k`` per query, {id: −exact distance}: K noisy candidates re-ranked."""
        from ..sealed import SEALED_KEY, candidate_count
        from ..sealed.rerank import rerank

        sent, clean = self.embedding.pipeline.embed_queries(list(queries), exact=True)
        self.candidates = candidate_count(k, float(self.embedding.eps), self._n)
        res = self._col.query(query_embeddings=np.asarray(sent), n_results=self.candidates, include=["metadatas"])
        out = []
        for q, (sids, metas) in enumerate(zip(res["ids"], res["metadatas"] or [], strict=True)):
            opened = self._sealer.open_many(sids, [m[SEALED_KEY] for m in metas])
            order, dist = rerank(clean[q], np.stack([p.vector for p in opened]), k, self._space)
            out.append({opened[j].doc_id: -float(d) for j, d in zip(order, dist, strict=True)})
        return out
