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

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..retrieval import strip_geometry
from .datasets import RetrievalDataset, SensitiveDataset, STSDataset
from .metrics import ndcg_at_k, pearson, spearman
from .readable import text_reader
from .store import DEFAULT_EF_SEARCH, VectorStore, open_store, prepare_documents

__all__ = ["LeakageSet", "Task", "attack", "group_split", "pair_groups", "victim_split"]


# --------------------------------------------------------------------------- leakage
@dataclass
class LeakageSet:
    """Sentences whose sensitive tokens the attackers try to recover.

    ``groups`` (optional, one hashable per sentence) keeps related sentences on one side of
    the attacker-train / victim-test split (STS: the two sentences of a pair); identical
    texts always share a side.
    """

    name: str
    data: SensitiveDataset
    train_share: float = 0.7
    groups: list[Any] | None = None

    def ids(self) -> list[str]:
        return [f"leak-{i}" for i in range(len(self.data))]

    def split_groups(self) -> list[Any]:
        """One group label per sentence: the explicit group, merged with identical texts."""
        base = self.groups if self.groups is not None else list(range(len(self.data)))
        return _merge_groups(base, self.data.texts)


def _merge_groups(groups: Sequence[Any], texts: Sequence[str]) -> list[int]:
    """Connected components of "same group" ∪ "same text" (union-find), as ints."""
    parent = list(range(len(groups)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for key in (list(groups), list(texts)):
        first: dict[Any, int] = {}
        for i, g in enumerate(key):
            if g in first:
                parent[find(i)] = find(first[g])
            else:
                first[g] = i
    return [find(i) for i in range(len(groups))]


def pair_groups(sentences1: Sequence[str], sentences2: Sequence[str], texts: Sequence[str]) -> list[int]:
    """Per text of ``texts``, a group such that the partners of every pair share one (so no
    paraphrase partner of a victim sentence is in the attacker's training split)."""
    row = {t: i for i, t in enumerate(texts)}
    groups = list(range(len(texts)))
    parent = groups
    for a, b in zip(sentences1, sentences2, strict=True):
        if a in row and b in row:
            ra, rb = _root(parent, row[a]), _root(parent, row[b])
            parent[ra] = rb
    return [_root(parent, i) for i in range(len(texts))]


def _root(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def group_split(groups: Sequence[Any], share: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices (first, rest): whole groups, in a random order, go to ``first`` until it holds
    ``round(share · n)`` items. With one item per group this is ``rng.permutation`` cut at
    that count (the split the harness used before groups)."""
    n = len(groups)
    cut = round(share * n)
    members: dict[Any, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    keys = list(members)
    first: list[int] = []
    rest: list[int] = []
    for j in rng.permutation(len(keys)):
        (first if len(first) < cut else rest).extend(members[keys[int(j)]])
    return np.asarray(first, dtype=np.int64), np.asarray(rest, dtype=np.int64)


VALIDATION_SHARE = 0.2
"""Share of the attacker-train split held out (by group) to choose an adaptive attacker's view."""


def victim_split(n: int, *, seed: int, train_share: float = 0.7, groups: Sequence[Any] | None = None,
                 split: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(attacker-train, victim-test) indices of :func:`attack`'s split of ``n`` items: ``split`` when
    given, else whole ``groups`` (default: one item each) drawn by :func:`group_split` with
    ``default_rng(seed)``. The attacker who reads the store (:func:`~private_vectors.eval.readable.text_reader`)
    is scored on the same victim-test items as the vector attackers."""
    if split is not None:
        return np.asarray(split[0], dtype=np.int64), np.asarray(split[1], dtype=np.int64)
    grp = list(range(n)) if groups is None else list(groups)
    return group_split(grp, train_share, np.random.default_rng(seed))


def attack(vectors: np.ndarray, tokens: list[list[str]], attackers: dict[str, Any], *, seed: int,
           train_share: float = 0.7, texts: Sequence[str] | None = None,
           transforms: dict[str, Any] | None = None, groups: Sequence[Any] | None = None,
           split: tuple[np.ndarray, np.ndarray] | None = None, scorer: Any = None) -> dict[str, Any]:
    """Split into attacker-train / victim-test, fit each attacker, return its metrics.

    ``scorer`` (optional; ``(fitted attacker, victim-test vectors, their indices) -> {metric:
    value}``) adds figures of each attacker's final fit on the victim-test split, as
    ``<metric>_<name>`` (the audit's name recovery).

    ``groups`` (one label per vector) keeps each group on one side of the split; ``split``
    (attacker-train indices, victim-test indices) fixes the split instead (the entity task's
    identity split, or auxiliary vectors followed by the victim's).
    An attacker that learns from the sentences themselves (``fit_needs_sentences``, the
    generative one) also gets the attacker-train ``texts``.

    ``transforms`` (name → object with ``apply``) make the attackers *adaptive*: each attacker
    also trains on the vectors post-processed by every transform — the public noise-aware
    transforms derived from the mechanism's Σ, which an attacker who knows the mechanism can
    apply as well as the querier. The view is chosen **on the attacker's side**: every view is
    fitted on part of the attacker-train split and scored on the rest (``VALIDATION_SHARE``,
    split by group); the best view is refitted on the whole attacker-train split and only
    then scored on the victim-test split (``leakage_<name>``, ``view_<name>``). Each view's
    validation figures (and its test figures from the smaller fit, for diagnosis) are kept
    under ``"attack_variants"``. ``epochs_<name>`` logs the epochs an attacker trained, when
    it reports them.
    """
    grp = list(range(len(vectors))) if groups is None else list(groups)
    tr, te = victim_split(len(vectors), seed=seed, train_share=train_share, groups=groups, split=split)
    views = {"raw": vectors}
    for tname, tf in (transforms or {}).items():
        views[tname] = np.asarray(tf.apply(vectors), dtype=np.float32)
    fit_tr, val = tr, np.zeros(0, dtype=np.int64)
    if len(views) > 1:
        sub, rest = group_split([grp[i] for i in tr], 1.0 - VALIDATION_SHARE, np.random.default_rng(seed + 1))
        fit_tr, val = tr[sub], tr[rest]
    out: dict[str, Any] = {}
    variants: dict[str, dict[str, float]] = {}
    for name, make in attackers.items():
        if len(views) == 1:
            res = _fit_evaluate(make(seed), vectors, tokens, tr, {"test": te}, texts, name, scorer)
            best_view = "raw"
        else:
            scores = {}
            for view, V in views.items():
                r = _fit_evaluate(make(seed), V, tokens, fit_tr, {"val": val, "test": te}, texts, name)
                variants[f"{name}@{view}"] = {"val_leakage": r["val"]["leakage"], "leakage": r["test"]["leakage"],
                                              "confidence": r["test"]["confidence"]}
                scores[view] = r["val"]["leakage"]
            best_view = max(scores, key=lambda v: (scores[v], v == "raw"))  # ties: the raw view
            res = _fit_evaluate(make(seed), views[best_view], tokens, tr, {"test": te}, texts, name, scorer)
        out.update({f"{metric}_{name}": v for metric, v in res.get("scored", {}).items()})
        out[f"leakage_{name}"] = res["test"]["leakage"]
        out[f"confidence_{name}"] = res["test"]["confidence"]
        if "epochs" in res:
            out[f"epochs_{name}"] = res["epochs"]
        if len(views) > 1:
            out[f"view_{name}"] = best_view
    if len(views) > 1 and attackers:
        out["attack_variants"] = variants
    return out


def _fit_evaluate(att: Any, V: np.ndarray, tokens: list[list[str]], tr: np.ndarray, parts: dict[str, np.ndarray],
                  texts: Sequence[str] | None, name: str, scorer: Any = None) -> dict[str, Any]:
    """Fit on ``tr``, evaluate on each of ``parts``; {part: metrics} (+ "epochs" when known, +
    "scored": ``scorer``'s figures on the test part when given)."""
    if getattr(att, "fit_needs_sentences", False):
        if texts is None:
            raise ValueError(f"attacker {name!r} needs the sentences of the leakage set")
        att.fit(V[tr], [texts[i] for i in tr], [tokens[i] for i in tr])
    else:
        att.fit(V[tr], [tokens[i] for i in tr])
    out: dict[str, Any] = {p: att.evaluate(V[idx], [tokens[i] for i in idx]) for p, idx in parts.items()}
    if hasattr(att, "n_epochs_"):
        out["epochs"] = int(att.n_epochs_)
    if scorer is not None and "test" in parts:
        out["scored"] = dict(scorer(att, V[parts["test"]], parts["test"]))
    return out


# --------------------------------------------------------------------------- tasks
@dataclass
class Task:
    """One data set of the grid: a utility source and a leakage set."""

    name: str
    kind: str  # "retrieval" | "sts" | "ddxplus" | "entity"
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
            sts_transform: Any = None, attack_transforms: dict[str, Any] | None = None,
            doc_transform: Any = None, aux_embedding: Any = None,
            ef_search: int = DEFAULT_EF_SEARCH, store_kind: str = "clear",
            reuse_attacks: tuple[str, dict[str, Any]] | None = None) -> dict[str, Any]:
        """Store, measure utility, read back, attack. Returns metrics.

        ``doc_transform`` (list[str] → list[str], optional) rewrites every text before it is
        stored — a text-stage row such as the presidio anchor; queries are not rewritten and
        the attackers still target the original sensitive tokens.

        ``aux_embedding`` (entity task): the same configuration under another key (or noise
        seed), for the key-less attacker (:meth:`_entity_attacks`).

        ``ef_search``: the Chroma collection's HNSW search breadth (:data:`DEFAULT_EF_SEARCH`).

        ``store_kind``: ``"clear"`` (the sanitized text stored in clear) or ``"sealed"``
        (:class:`~private_vectors.eval.sealed_store.SealedStore`: records, markers, the key holder's
        re-ranked search; Chroma, retrieval and Pri-DDXPlus tasks). ``reuse_attacks`` = (digest of
        the leakage set's stored vectors, attack metrics): when the vectors read back have that
        digest (a sealed store holds the clear store's noisy vectors), the metrics are reused
        instead of training the attackers again; every line records its digest
        (``leak_vectors_sha256``).
        """
        store = _open(embedding, backend, ef_search, store_kind)
        if doc_transform is not None:
            store.doc_transform = doc_transform
        try:
            out: dict[str, float] = {}
            if self.kind == "retrieval":
                out.update(self._retrieval(store))
            elif self.kind == "sts":
                out.update(self._sts(store, sts_transform))
            elif self.kind == "ddxplus":
                out.update(self._ddxplus(store))
            elif self.kind == "entity":
                out.update(self._entity(store))
                out.update(self._entity_attacks(store, attackers, seed=seed, transforms=attack_transforms,
                                                aux_embedding=aux_embedding, doc_transform=doc_transform))
                return out
            if self.leakage is not None and attackers:
                lk = self.leakage
                V = store.vectors(self._leak_ids())
                out["leak_vectors_sha256"] = digest = hashlib.sha256(np.ascontiguousarray(V).tobytes()).hexdigest()
                if reuse_attacks is not None and reuse_attacks[0] == digest:
                    out.update(reuse_attacks[1])
                else:
                    out.update(attack(V, lk.data.tokens, attackers, seed=seed, train_share=lk.train_share,
                                      texts=lk.data.texts, transforms=attack_transforms, groups=lk.split_groups()))
            if self.leakage is not None:
                out.update(self._read_store(store, seed))
            return out
        finally:
            store.close()

    def _leak_ids(self) -> list[str]:
        assert self.leakage is not None
        if self.kind == "retrieval" and self.leakage_in_store:
            return self.leakage.ids()
        return self.meta["leak_ids"]

    def _read_store(self, store: VectorStore, seed: int, split: tuple[np.ndarray, np.ndarray] | None = None
                    ) -> dict[str, float]:
        """The attacker who reads what the store keeps in clear (:func:`~private_vectors.eval.readable.text_reader`),
        on the vector attackers' victim split: ``leakage_text`` and ``text_docs_readable``."""
        lk = self.leakage
        assert lk is not None
        ids = self._leak_ids()
        _, te = victim_split(len(ids), seed=seed, train_share=lk.train_share, groups=lk.split_groups(), split=split)
        return text_reader(lk.data.tokens, store.stored_texts(ids), te)

    def _retrieval(self, store: VectorStore) -> dict[str, float]:
        ds = self.retrieval
        assert ds is not None
        store.add(list(ds.corpus), list(ds.corpus.values()))
        if self.leakage is not None and self.leakage_in_store:
            store.add(self.leakage.ids(), self.leakage.data.texts)
        qids = list(ds.queries)
        hits = store.search([ds.queries[q] for q in qids], 10)
        run = {q: h for q, h in zip(qids, hits, strict=True)}
        return {"utility": ndcg_at_k(run, ds.qrels, 10), **_candidates(store)}

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
        return {"utility": ndcg_at_k(run, qrels, 10), **_candidates(store)}

    # ---------------------------------------------------------------- entity retrieval
    def _entity(self, store: VectorStore) -> dict[str, float]:
        """Ingest the entity corpus; NDCG@10 of the person queries (``utility``) and of the city
        queries (``utility_city``), and the person queries' top-1 rate, through the store with
        the embedding's query path (its text stage's ``apply_queries`` included)."""
        corpus = self.meta["entity"]
        ds = self.retrieval
        assert ds is not None
        store.add(list(ds.corpus), list(ds.corpus.values()))
        out: dict[str, float] = {}
        groups = {"": corpus.person_queries(), "_city": [q for q, k in corpus.query_kind.items() if k == "city"]}
        for suffix, qids in groups.items():
            if not qids:
                continue
            hits = store.search([ds.queries[q] for q in qids], 10)
            run = {q: h for q, h in zip(qids, hits, strict=True)}
            qrels = {q: ds.qrels[q] for q in qids}
            out[f"utility{suffix}"] = ndcg_at_k(run, qrels, 10)
            if not suffix:
                firsts = [max(h, key=h.__getitem__) if h else None for h in hits]
                out["utility_person_top1"] = float(np.mean([f is not None and qrels[q].get(f, 0) > 0
                                                            for q, f in zip(qids, firsts, strict=True)]))
        return out

    def _entity_attacks(self, store: VectorStore, attackers: dict[str, Any], *, seed: int,
                        transforms: dict[str, Any] | None, aux_embedding: Any, doc_transform: Any) -> dict[str, Any]:
        """The entity task's attackers on the original sensitive values, on one identity split
        (``EntityCorpus.attacker_split``: no identity and no document on both sides):

        * known-plaintext (``leakage_<name>``): trained on the victim's own stored vectors of
          the attacker-side identities with their true tokens;
        * known-plaintext, document split (``leakage_<name>-docsplit``, when the data set's
          ``document_split`` is set): the harness's usual split by document, so the attacker
          has labelled documents of the victims' own identities (for surrogates: it can learn
          a person's surrogate from them);
        * key-less (``leakage_<name>-keyless``): trained on the same attacker-side documents
          protected by ``aux_embedding`` — the same configuration under a different key (the
          attacker runs the public mechanism with its own key) — and scored on the victim's
          stored vectors of the victim-side identities;
        * frequency / linking (``leakage_linking``, :class:`~private_vectors.eval.linking.LinkingAttacker`):
          links the stored texts of the whole collection to a directory of the candidate
          identities by pseudonym clusters, frequency and attributes; share of the documents
          whose real identity is recovered — all of them, since it uses no labelled documents
          (``leakage_linking-prior``: always guessing the most frequent identity); the data
          set's ``linking_variants`` ({suffix: parameters}) add weaker linkers
          (``leakage_linking-<suffix>``), e.g. one that knows names and frequencies only.
        """
        from .linking import LinkingAttacker, directory_record, zipf_frequencies

        corpus = self.meta["entity"]
        lk = self.leakage
        assert lk is not None
        ids = self.meta["leak_ids"]
        pos = {d: i for i, d in enumerate(ids)}
        sp = corpus.attacker_split(lk.train_share, seed=seed)
        a_idx = np.asarray([pos[d] for d in sp.attacker_docs], dtype=np.int64)
        v_idx = np.asarray([pos[d] for d in sp.victim_docs], dtype=np.int64)
        groups = lk.split_groups()
        tokens, texts = lk.data.tokens, lk.data.texts
        out: dict[str, Any] = {"n_attacker_docs": float(len(a_idx)), "n_victim_docs": float(len(v_idx))}
        if attackers:
            V = store.vectors(ids)
            kp = attack(V, tokens, attackers, seed=seed, texts=texts, transforms=transforms, groups=groups,
                        split=(a_idx, v_idx))
            out.update(kp)
            if self.meta.get("document_split"):
                # the known-plaintext attacker with other documents of the *same* people: what a
                # consistent surrogate gives away to someone who has seen its plaintext elsewhere
                ds_ = attack(V, tokens, attackers, seed=seed, train_share=lk.train_share, texts=texts,
                             transforms=transforms)
                out.update(_suffixed(ds_, "-docsplit"))
            if aux_embedding is not None:
                aux_texts = [texts[i] for i in a_idx]
                if doc_transform is not None:
                    aux_texts = list(doc_transform(aux_texts))
                _, Va = prepare_documents(aux_embedding, aux_texts)
                Va = strip_geometry(np.asarray(Va, dtype=np.float32), getattr(aux_embedding, "store_geometry", "none"))
                order = np.concatenate([a_idx, v_idx])
                na = len(a_idx)
                kl = attack(np.vstack([Va, V[v_idx]]), [tokens[i] for i in order], attackers, seed=seed,
                            texts=[texts[i] for i in order], transforms=transforms,
                            groups=[groups[i] for i in order],
                            split=(np.arange(na), np.arange(na, len(order))))
                out.update(_suffixed(kl, "-keyless"))
        out.update(self._read_store(store, seed, split=(a_idx, v_idx)))
        link_cfg = self.meta.get("linking")
        if link_cfg is not None and store.backend == "chroma":
            stored = store.stored_texts(ids)
            owner = {doc.id: doc.identity for doc in corpus.documents}
            truth = [owner[d] for d in ids]
            directory = [directory_record(p) for p in corpus.identities]
            freq = zipf_frequencies(len(corpus.identities), float(corpus.config["zipf_s"]))
            variants = {"linking": dict(link_cfg), **{f"linking-{k}": dict(v) for k, v in
                                                      (self.meta.get("linking_variants") or {}).items()}}
            for name, params in variants.items():
                # it learns nothing from labelled documents: every document is scored
                res = LinkingAttacker(**params).fit(directory, freq).evaluate(stored, truth)
                out[f"leakage_{name}"] = res["leakage"]
                if name == "linking":
                    out["leakage_linking-prior"] = res["prior"]
                    out["linking_pseudonym_share"] = res["pseudonym_share"]
            out["stored_raw_name_share"] = float(np.mean([
                bool(t) and corpus.identities[truth[i]].name in (t or "") for i, t in enumerate(stored)]))
        return out


STORE_KINDS = ("clear", "sealed")
"""The store kinds a task runs on (see :meth:`Task.run`)."""


def _open(embedding: Any, backend: str, ef_search: int, store_kind: str) -> VectorStore:
    if store_kind == "clear":
        return open_store(embedding, backend, ef_search=ef_search)
    if store_kind != "sealed" or backend != "chroma":
        raise ValueError(f"store_kind: expected 'clear', or 'sealed' on the chroma backend, received {store_kind!r} "
                         f"on {backend!r}")
    from .sealed_store import SealedStore

    return SealedStore(embedding, ef_search=ef_search)


def _candidates(store: VectorStore) -> dict[str, Any]:
    """A sealed store's K (noisy candidates per query) and size N, for the results line."""
    k = getattr(store, "candidates", None)
    return {} if k is None else {"candidates": k, "store_size": getattr(store, "_n", None)}


def _suffixed(metrics: dict[str, Any], suffix: str) -> dict[str, Any]:
    """``leakage_nn`` → ``leakage_nn<suffix>`` (and ``attack_variants`` → ``attack_variants<suffix>``)."""
    out: dict[str, Any] = {}
    for k, v in metrics.items():
        if k == "attack_variants":
            out[f"attack_variants{suffix.replace('-', '_')}"] = v
        else:
            head, name = k.split("_", 1)
            out[f"{head}_{name}{suffix}"] = v
    return out
