"""Benchmark tasks: one data set's utility measurement and leakage measurement, both run
against vectors that went through a real vector store.

* ``retrieval`` (BEIR): documents are ingested through the PrivateEmbedding into Chroma
  (or FAISS), queries go through ``embed_query`` and the store's search; NDCG@10.
* ``sts``: both sentences of each pair are stored; vectors are read back and the Pearson
  correlation of their cosine similarity with the gold scores is the utility.
* ``ddxplus``: full vignettes are stored; each masked vignette (sensitive items removed)
  is the query for its own full vignette; NDCG@10.

Leakage: the sentences of the task's leakage set (a PII set ingested into the same store,
or the task's own texts) are read back from the store (``collection.get(include=
["embeddings"])`` / ``index.reconstruct``), split into attacker-train and victim-test, and
each attacker is trained on the attacker-train vectors (perturbed by the same mechanism and
ε — the attacker knows both, SPARSE App. I) and evaluated on the victim-test vectors.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..datasets import RetrievalDataset, SensitiveDataset, STSDataset
from ..metrics import ndcg_at_k, pearson, spearman

__all__ = ["LeakageSet", "Task", "VectorStore", "attack", "open_store"]


# --------------------------------------------------------------------------- stores
class VectorStore:
    """A thin, uniform face over a Chroma collection or a FAISS index built from texts."""

    def __init__(self, embedding: Any, backend: str = "chroma") -> None:
        self.embedding = embedding
        self.backend = backend
        if backend == "chroma":
            import chromadb

            self._client = chromadb.EphemeralClient()
            self._name = f"bench-{uuid.uuid4().hex[:12]}"
            self._col = self._client.create_collection(
                self._name, embedding_function=embedding,
                configuration={"hnsw": {"space": embedding.default_space(), "ef_search": 200,
                                        "ef_construction": 200}})
        elif backend == "faiss":
            from ..integrations.faiss import PrivateFaissIndex

            self._index = PrivateFaissIndex(embedding, kind="flat")
            self._ids: dict[str, int] = {}
        else:
            raise ValueError(f"backend: expected 'chroma' or 'faiss', received {backend!r}")

    def add(self, ids: Sequence[str], texts: Sequence[str], batch: int = 1000) -> None:
        """Embed (perturb) and store ``texts`` under ``ids``."""
        for s in range(0, len(texts), batch):
            i, t = list(ids[s:s + batch]), list(texts[s:s + batch])
            if self.backend == "chroma":
                self._col.add(ids=i, documents=t)
            else:
                new = self._index.add_texts(t)
                self._ids.update(zip(i, new, strict=True))

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
            return np.asarray([got[i] for i in ids], dtype=np.float32)
        base = self._index._cpu_index()
        return np.vstack([base.reconstruct(int(self._ids[i])) for i in ids]).astype(np.float32)

    def close(self) -> None:
        if self.backend == "chroma":
            self._client.delete_collection(self._name)


def open_store(embedding: Any, backend: str) -> VectorStore:
    return VectorStore(embedding, backend)


# --------------------------------------------------------------------------- leakage
@dataclass
class LeakageSet:
    """Sentences whose sensitive tokens the attackers try to recover."""

    name: str
    data: SensitiveDataset
    train_share: float = 0.7

    def ids(self) -> list[str]:
        return [f"leak-{i}" for i in range(len(self.data))]


def attack(vectors: np.ndarray, tokens: list[list[str]], attackers: dict[str, Any], *, seed: int,
           train_share: float = 0.7, texts: Sequence[str] | None = None,
           transforms: dict[str, Any] | None = None) -> dict[str, Any]:
    """Split into attacker-train / victim-test, fit each attacker, return its metrics.

    An attacker that learns from the sentences themselves (``fit_needs_sentences``, the
    generative one) also gets the attacker-train ``texts``.

    ``transforms`` (name → object with ``apply``) make the attackers *adaptive*: each attacker
    also trains and attacks on the vectors post-processed by every transform — the public
    noise-aware transforms derived from the mechanism's Σ, which an attacker who knows the
    mechanism can apply as well as the querier — and reports the best of its variants as
    ``leakage_<name>`` / ``confidence_<name>``; every variant's figures are kept under
    ``"attack_variants"``.
    """
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(vectors))
    cut = round(train_share * len(vectors))
    tr, te = order[:cut], order[cut:]
    views = {"raw": vectors}
    for tname, tf in (transforms or {}).items():
        views[tname] = np.asarray(tf.apply(vectors), dtype=np.float32)
    out: dict[str, Any] = {}
    variants: dict[str, dict[str, float]] = {}
    for name, make in attackers.items():
        best: dict[str, float] | None = None
        for view, V in views.items():
            res = _fit_evaluate(make(seed), V, tokens, tr, te, texts, name)
            variants[f"{name}@{view}"] = {"leakage": res["leakage"], "confidence": res["confidence"]}
            if best is None or res["leakage"] > best["leakage"]:
                best = res
        assert best is not None
        out[f"leakage_{name}"] = best["leakage"]
        out[f"confidence_{name}"] = best["confidence"]
    if len(views) > 1 and attackers:
        out["attack_variants"] = variants
    return out


def _fit_evaluate(att: Any, V: np.ndarray, tokens: list[list[str]], tr: np.ndarray, te: np.ndarray,
                  texts: Sequence[str] | None, name: str) -> dict[str, float]:
    if getattr(att, "fit_needs_sentences", False):
        if texts is None:
            raise ValueError(f"attacker {name!r} needs the sentences of the leakage set")
        att.fit(V[tr], [texts[i] for i in tr], [tokens[i] for i in tr])
    else:
        att.fit(V[tr], [tokens[i] for i in tr])
    return att.evaluate(V[te], [tokens[i] for i in te])


# --------------------------------------------------------------------------- tasks
@dataclass
class Task:
    """One data set of the grid: a utility source and a leakage set."""

    name: str
    kind: str  # "retrieval" | "sts" | "ddxplus"
    utility_metric: str
    retrieval: RetrievalDataset | None = None
    sts: STSDataset | None = None
    leakage: LeakageSet | None = None
    leakage_in_store: bool = True  # leakage sentences are extra documents of the same store
    meta: dict[str, Any] = field(default_factory=dict)

    def texts(self) -> list[str]:
        """Every text this task will embed (for the encoder cache)."""
        out: list[str] = []
        if self.retrieval is not None:
            out += list(self.retrieval.corpus.values()) + list(self.retrieval.queries.values())
        if self.sts is not None:
            out += self.sts.sentences1 + self.sts.sentences2
        if self.leakage is not None:
            out += self.leakage.data.texts + list(self.leakage.data.masked_texts)
        return out

    def run(self, embedding: Any, attackers: dict[str, Any], *, seed: int, backend: str = "chroma",
            sts_transform: Any = None, attack_transforms: dict[str, Any] | None = None) -> dict[str, Any]:
        """Store, measure utility, read back, attack. Returns metrics."""
        store = open_store(embedding, backend)
        try:
            out: dict[str, float] = {}
            if self.kind == "retrieval":
                out.update(self._retrieval(store))
            elif self.kind == "sts":
                out.update(self._sts(store, sts_transform))
            elif self.kind == "ddxplus":
                out.update(self._ddxplus(store))
            if self.leakage is not None and attackers:
                lk = self.leakage
                V = store.vectors(self._leak_ids())
                out.update(attack(V, lk.data.tokens, attackers, seed=seed, train_share=lk.train_share,
                                  texts=lk.data.texts, transforms=attack_transforms))
            return out
        finally:
            store.close()

    def _leak_ids(self) -> list[str]:
        assert self.leakage is not None
        if self.kind == "retrieval" and self.leakage_in_store:
            return self.leakage.ids()
        return self.meta["leak_ids"]

    def _retrieval(self, store: VectorStore) -> dict[str, float]:
        ds = self.retrieval
        assert ds is not None
        store.add(list(ds.corpus), list(ds.corpus.values()))
        if self.leakage is not None and self.leakage_in_store:
            store.add(self.leakage.ids(), self.leakage.data.texts)
        qids = list(ds.queries)
        hits = store.search([ds.queries[q] for q in qids], 10)
        run = {q: h for q, h in zip(qids, hits, strict=True)}
        return {"utility": ndcg_at_k(run, ds.qrels, 10)}

    def _sts(self, store: VectorStore, transform: Any) -> dict[str, float]:
        ds = self.sts
        assert ds is not None
        uniq = list(dict.fromkeys(ds.sentences1 + ds.sentences2))
        ids = {t: f"s{i}" for i, t in enumerate(uniq)}
        store.add([ids[t] for t in uniq], uniq)
        V = store.vectors([ids[t] for t in uniq])
        if transform is not None:
            V = np.asarray(transform(V), dtype=np.float32)
        row = {t: i for i, t in enumerate(uniq)}
        A = V[[row[t] for t in ds.sentences1]]
        B = V[[row[t] for t in ds.sentences2]]
        cos = (A * B).sum(1) / (np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1) + 1e-12)
        self.meta["leak_ids"] = [ids[t] for t in self.leakage.data.texts] if self.leakage else []
        return {"utility": pearson(cos, ds.scores), "spearman": spearman(cos, ds.scores)}

    def _ddxplus(self, store: VectorStore) -> dict[str, float]:
        lk = self.leakage
        assert lk is not None
        ids = [f"v{i}" for i in range(len(lk.data))]
        store.add(ids, lk.data.texts)
        hits = store.search(lk.data.masked_texts, 10)
        run = {i: h for i, h in zip(ids, hits, strict=True)}
        qrels = {i: {i: 1} for i in ids}
        self.meta["leak_ids"] = ids
        return {"utility": ndcg_at_k(run, qrels, 10)}
