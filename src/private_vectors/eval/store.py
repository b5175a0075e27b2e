"""The harness's vector stores: a thin, uniform face over a Chroma collection or a FAISS index,
written through a PrivateEmbedding the way the library's own store paths write (each text
sanitized once, that text embedded and stored), with the text stage's outputs memoised across
the cells of a grid (:func:`sanitize_once`).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..retrieval import strip_geometry

__all__ = ["DEFAULT_EF_SEARCH", "VectorStore", "open_store", "prepare_documents", "sanitize_once"]

# --------------------------------------------------------------------------- stores
DEFAULT_EF_SEARCH = 200
"""HNSW ``ef_search`` of the harness's Chroma collections (a config's ``"ef_search"``). Chroma
builds its HNSW graph non-deterministically, so an approximate search can return different
neighbours in two runs; the exact duplicates redaction makes (identical redacted sentences) make
misses likelier. A value of the order of the store's size makes the search exact in practice."""


class VectorStore:
    """A thin, uniform face over a Chroma collection or a FAISS index built from texts."""

    def __init__(self, embedding: Any, backend: str = "chroma", *, ef_search: int = DEFAULT_EF_SEARCH,
                 client: Any = None, name: str | None = None) -> None:
        self.embedding = embedding
        self.backend = backend
        self.doc_transform: Any = None  # list[str] -> list[str] applied to stored texts
        self._chain = ""  # hash of the texts ingested so far (the sanitize memo's key)
        if backend == "chroma":
            import chromadb

            self._client = client if client is not None else chromadb.EphemeralClient()
            self._name = name or f"bench-{uuid.uuid4().hex[:12]}"
            self._col = self._client.create_collection(
                self._name, embedding_function=embedding,
                configuration={"hnsw": {"space": embedding.default_space(), "ef_search": int(ef_search),
                                        "ef_construction": 200}})
        elif backend == "faiss":
            from ..integrations.faiss import PrivateFaissIndex

            self._index = PrivateFaissIndex(embedding, kind="flat")
            self._ids: dict[str, int] = {}
        else:
            raise ValueError(f"backend: expected 'chroma' or 'faiss', received {backend!r}")

    def add(self, ids: Sequence[str], texts: Sequence[str], batch: int = 1000) -> None:
        """Embed (perturb) and store ``texts`` under ``ids`` (after ``doc_transform``, if set).

        Chroma: each text is sanitized once by the embedding's text stage, when it has one
        (``sanitize_documents``, memoised across cells by :func:`sanitize_once`), and the
        sanitized text is what is embedded and stored, as ``chroma_store`` does; a
        ``doc_transform`` row stores its transformed text; a row without a text stage stores
        no text."""
        for s in range(0, len(texts), batch):
            i, t = list(ids[s:s + batch]), list(texts[s:s + batch])
            if self.doc_transform is not None:
                t = list(self.doc_transform(t))
            if self.backend == "chroma":
                stored, vecs = prepare_documents(self.embedding, t, self._chain)
                self._chain = _chain_hash(self._chain, t)
                if stored is None and self.doc_transform is not None:
                    stored = t  # already rewritten by the row's text stage: not raw text
                if stored is None:
                    self._col.add(ids=i, embeddings=vecs)
                else:
                    self._col.add(ids=i, embeddings=vecs, documents=stored)
            else:
                new = self._index.add_texts(t)
                self._ids.update(zip(i, new, strict=True))

    def stored_texts(self, ids: Sequence[str]) -> list[str | None]:
        """The texts the store keeps for ``ids`` (None where it keeps none), read back from it."""
        if self.backend != "chroma":
            return [self._index.texts.get(int(self._ids[i])) or None for i in ids]
        got: dict[str, Any] = {}
        ids = list(ids)
        for s in range(0, len(ids), 2000):
            res = self._col.get(ids=ids[s:s + 2000], include=["documents"])
            docs = res["documents"] if res["documents"] is not None else [None] * len(res["ids"])
            got.update(zip(res["ids"], docs, strict=True))
        return [got.get(i) or None for i in ids]

    def search(self, queries: Sequence[str], k: int) -> list[dict[str, float]]:
        """Per query, {stored id: score} of the top ``k`` (higher is better)."""
        if self.backend == "chroma":
            Q = self.embedding.embed_query(list(queries))
            res = self._col.query(query_embeddings=Q, n_results=k, include=["distances"])
            distances = res["distances"] if res["distances"] is not None else []
            return [{d: -float(s) for d, s in zip(ids, dist, strict=True)}
                    for ids, dist in zip(res["ids"], distances, strict=True)]
        scores, idx = self._index.search(list(queries), k)
        back = {v: k_ for k_, v in self._ids.items()}
        out = []
        for srow, irow in zip(scores, idx, strict=True):
            sign = -1.0 if self._index.metric == "l2" else 1.0
            out.append({back[int(i)]: sign * float(s) for s, i in zip(srow, irow, strict=True) if i >= 0})
        return out

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The stored (perturbed) vectors of ``ids``, in that order, read back from the store."""
        if self.backend == "chroma":
            got: dict[str, Any] = {}
            ids = list(ids)
            for s in range(0, len(ids), 2000):
                res = self._col.get(ids=ids[s:s + 2000], include=["embeddings"])
                embs = res["embeddings"] if res["embeddings"] is not None else []
                got.update(zip(res["ids"], embs, strict=True))
            stored = np.asarray([got[i] for i in ids], dtype=np.float32)
        else:
            base = self._index._cpu_index()
            stored = np.vstack([base.reconstruct(int(self._ids[i])) for i in ids]).astype(np.float32)
        # the augmentation coordinate is a function of the row's norm: attackers and STS see the
        # mechanism's output itself
        return strip_geometry(stored, getattr(self.embedding, "store_geometry", "none"))

    def close(self) -> None:
        if self.backend == "chroma":
            self._client.delete_collection(self._name)


def open_store(embedding: Any, backend: str, *, ef_search: int = DEFAULT_EF_SEARCH) -> VectorStore:
    return VectorStore(embedding, backend, ef_search=ef_search)


_SANITIZED: dict[str, tuple[list[str], dict[str, Any] | None]] = {}
"""Memo of the text stage's outputs: a grid sanitizes the same corpus, in the same batches, with
the same sanitizer configuration and key for every ε and noise row of a seed."""


def _chain_hash(previous: str, texts: Sequence[str]) -> str:
    h = hashlib.sha256(previous.encode())
    for t in texts:
        h.update(hashlib.sha256(t.encode("utf-8")).digest())
    return h.hexdigest()


def sanitize_once(embedding: Any, texts: Sequence[str], chain: str = "") -> list[str]:
    """``embedding.sanitize_documents(texts)``, memoised by (sanitizer configuration, key check
    value, every batch ingested before this one, ``texts``): the Sanitizer's keyed index makes
    its output depend on earlier batches, so a hit restores the index it had after this batch.
    The key itself is not part of the memo key (only its check value)."""
    san = getattr(embedding, "sanitizer", None)
    if san is None:
        return list(texts)
    state = san.get_state() if hasattr(san, "get_state") else None
    if state is None or not state.get("keyed"):  # a random per-instance index: nothing to share
        return list(embedding.sanitize_documents(texts))
    cfg = json.dumps(san.get_config(), sort_keys=True, default=str)
    memo = hashlib.sha256(f"{cfg}|{state['key_id']}|{_chain_hash(chain, texts)}".encode()).hexdigest()
    if memo in _SANITIZED:
        out, after = _SANITIZED[memo]
        if after is not None:
            embedding.pipeline.load_query_index_state(after)
        return list(out)
    out = list(embedding.sanitize_documents(texts))
    _SANITIZED[memo] = (out, embedding.pipeline.query_index_state())
    return out


def prepare_documents(embedding: Any, texts: Sequence[str], chain: str = "") -> tuple[list[str] | None, np.ndarray]:
    """(texts to store or None, vectors): :meth:`PrivateEmbedding.prepare_documents` with the
    sanitizing memoised (:func:`sanitize_once`) — each text sanitized once, that text embedded."""
    if not hasattr(embedding, "pipeline"):  # a plain embedding function
        return None, np.asarray(embedding(list(texts)), dtype=np.float32)
    sanitized = sanitize_once(embedding, texts, chain)
    return embedding.pipeline.texts_to_store(texts, sanitized), embedding.pipeline.embed_sanitized(sanitized, raw=texts)
