"""Key-holder retrieval of a sealed store at scale: SciFact and NFCorpus with 100,000 distractor vectors.

A sealed store keeps the noisy vector as the only searchable thing; the key holder fetches the top
K noisy candidates, opens their records and re-ranks them by the exact vectors (after erasure,
before noise) against the clean query vector (:mod:`private_vectors.sealed.rerank`). This script
measures, per corpus and ε, NDCG@10 of the same store without noise ("clean"), of the noisy
ranking, and of the key holder's re-ranking at several K, with K/N and candidate recall@K (the
share of the clean top 10 inside the noisy top K), in an index holding the corpus and 100,000
distractor vectors: texts of other corpora cut into pieces of at most 10 words (presidio's
synthetic sentences, Pri-DDXPlus vignettes, CoNLL-2003 news, TAB judgments, DBpedia-5k abstracts,
then STS / SICK sentences to fill up; the same distractors in both indexes). ``--parts fit`` fits
the K rule on SciFact (the K at which recall@K reaches 0.95, over a grid of ε);
``--parts retrieval`` reads the library's rule :func:`~private_vectors.sealed.candidate_count` on
both corpora and on smaller stores (the corpus with 0, 25,000, 50,000 distractors);
``--parts cost`` times the store-side query cost of a sealed read against an unsealed one on
Chroma (``PersistentClient``, then ``HttpClient`` against ``chroma run`` on localhost).

The vectors are the library's own: ``PrivateEmbedding(eps=ε, key=...)`` with the packaged
all-MiniLM-L6-v2, its Laplace mechanism and default store geometry (cosine space, unit-norm noisy
vectors), no text stage (the texts are public benchmark texts: the retrieval figures measure the
noise and the re-ranking, as the prototype did), through ``pipeline.embed_documents(texts,
exact=True)`` and ``pipeline.embed_queries(texts, exact=True)``. The encoder runs once per text:
:class:`~private_vectors.eval.cache.CachingEncoder` keeps its vectors under ``--cache-dir`` (npy
files; the first run encodes the two corpora and 100,000 short texts: about an hour on two busy
shared cores; ``--encode-worker 0/2`` and ``1/2`` run at once split the distractors, one torch
thread each). The retrieval figures rank by brute force in the store's space (exact top K of the
noisy vectors: what an HNSW index approximates); the cost part runs the real Chroma HNSW index.

Run (``--cache-dir``: where the encoder's vectors and the Chroma folder are kept, never committed)::

    nice -n 10 .venv/bin/python benchmarks/sealed_retrieval.py --parts fit retrieval cost --cache-dir DIR
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _shared import DATA, RESULTS

OUT = RESULTS / "sealed_retrieval"
CORPORA = ("scifact", "nfcorpus")
EPS = (5.0, 10.0, 20.0)
KS = (50, 100, 200, 500, 1000)
DISTRACTORS = 100_000
PIECE_WORDS = 10  # distractor texts are cut to at most this many words (short texts encode fast)
KEY = "sealed-retrieval-benchmark-key-0001"  # a fixed public key and salt: the noise is reproducible
SALT = b"sealed-retrieval-salt-01"
CHUNK = 2048  # texts per cache file (and per progress line)


# --------------------------------------------------------------------------- distractor texts
def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]


def _pieces(texts: Iterable[str], words: int = PIECE_WORDS, minimum: int = 4) -> list[str]:
    """Sentences of ``texts`` cut into runs of at most ``words`` words (runs under ``minimum`` dropped)."""
    out = []
    for text in texts:
        for sent in _sentences(text):
            toks = sent.split()
            out += [" ".join(toks[i:i + words]) for i in range(0, len(toks), words) if len(toks[i:i + words]) >= minimum]
    return out


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _sts_sentences(root: Path) -> list[str]:
    out: list[str] = []
    for f in sorted(root.glob("STS1*/STS*.input.*.txt")):
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            out += line.split("\t")[:2]
    for f in sorted((root / "STSBenchmark").glob("sts-*.csv")):
        for line in f.read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            out += parts[5:7] if len(parts) >= 7 else []
    for f in sorted((root / "SICK").glob("*.txt")):
        for line in f.read_text(encoding="utf-8").splitlines()[1:]:
            out += line.split("\t")[1:3]
    return out


def _news_sentences(path: Path) -> list[str]:
    out, cur = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("-DOCSTART"):
            if cur:
                out.append(" ".join(cur))
            cur = []
        else:
            cur.append(line.split()[0])
    return out + ([" ".join(cur)] if cur else [])


def pool(data: Path) -> dict[str, list[str]]:
    """The distractor sources, each cut into pieces of at most PIECE_WORDS words, in the order they
    are taken (the small sets first, STS last, to fill up)."""
    dd = data / "medical" / "pri-ddxplus"
    return {
        "presidio": _pieces(r["full_text"] for r in json.loads((data / "pii" / "synth_dataset_v2.json").read_text())),
        "pri-ddxplus": _pieces(r["question_init"] for f in ("test.json", "dev.json") for r in _jsonl(dd / f)),
        "news": _pieces(_news_sentences(data / "pii" / "news" / "conll2003_valid.txt")),
        "tab": _pieces(r["text"] for r in _jsonl(data / "pii" / "tab" / "tab_train_dev.jsonl")),
        "dbpedia-5k": _pieces(r.get("text", "") for r in _jsonl(data / "retrieval" / "dbpedia-5k" / "corpus.jsonl")),
        "sts": _pieces(_sts_sentences(data / "sts")),
    }


def distractors(data: Path, exclude: Iterable[str], n: int = DISTRACTORS) -> tuple[list[str], dict[str, int]]:
    """``n`` distinct distractor texts (:func:`pool`, in order), texts in ``exclude`` (the corpora's
    documents) left out; the same for both corpora. Returns (texts, count per source)."""
    seen, out, counts = set(exclude), [], {}
    for name, texts in pool(data).items():
        before = len(out)
        for t in texts:
            if len(out) >= n:
                break
            if t not in seen:
                seen.add(t)
                out.append(t)
        counts[name] = len(out) - before
    if len(out) < n:
        raise SystemExit(f"only {len(out)} distinct distractor texts, {n} asked")
    return out, counts


# --------------------------------------------------------------------------- encoding (cached)
WORKER = (0, 1)  # (i, m): this process encodes every m-th chunk of the distractors, from the i-th (--encode-worker)


def warm(enc: Any, texts: Sequence[str], label: str, *, share: tuple[int, int] = (0, 1)) -> None:
    """Encode ``texts`` through ``enc`` (a CachingEncoder with a cache folder) CHUNK at a time,
    printing progress; chunks already cached load from disk. ``share`` = (i, m): only the chunks
    i, i + m, i + 2m, … (m processes encode at once; the same cache files as one process)."""
    start = time.perf_counter()
    for c, i in enumerate(range(0, len(texts), CHUNK)):
        if c % share[1] != share[0]:
            continue
        enc.warm(texts[i:i + CHUNK])
        done = min(i + CHUNK, len(texts))
        print(f"[encode {label}] {done}/{len(texts)} texts, {time.perf_counter() - start:.0f} s", flush=True)


def load_corpus(data: Path, name: str) -> Any:
    from private_vectors.eval.datasets import load_beir

    return load_beir(data / "retrieval" / name)


def build_indexes(data: Path, enc: Any) -> dict[str, dict[str, Any]]:
    """Per corpus: ids, texts (corpus then distractors), queries, qrels, distractor counts; every text encoded."""
    out = {}
    for name in CORPORA:
        ds = load_corpus(data, name)
        dids = list(ds.corpus)
        docs = [ds.corpus[d] for d in dids]
        qids = list(ds.queries)
        queries = [ds.queries[q] for q in qids]
        warm(enc, docs + queries, f"{name} corpus + queries")
        out[name] = {"docs": docs, "dids": dids, "qids": qids, "queries": queries, "qrels": ds.qrels}
    dis, counts = distractors(data, [t for ds in out.values() for t in ds["docs"]])
    warm(enc, dis, "distractors", share=WORKER)
    if WORKER != (0, 1):
        raise SystemExit(0)
    for name in CORPORA:  # each corpus in its own index, beside the same distractors
        ds = out[name]
        dids, qids, queries, docs = ds["dids"], ds["qids"], ds["queries"], ds["docs"]
        out[name] = {"doc_ids": dids + [f"distractor:{i}" for i in range(len(dis))], "texts": docs + dis,
                     "n_corpus": len(dids), "query_ids": qids, "queries": queries, "qrels": ds["qrels"],
                     "distractor_sources": counts}
    return out



# --------------------------------------------------------------------------- vectors and rankings
def embedding(eps: float, enc: Any) -> Any:
    """The library's function: default Laplace, default geometry, keyed noise, no text stage."""
    import warnings

    from private_vectors import PrivateEmbedding

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateEmbedding(eps=eps, key=KEY, key_salt=SALT, model=enc)


def vectors(ix: dict[str, Any], eps: float, enc: Any, memo: dict[tuple[float, str], Any] | None = None) -> dict[str, Any]:
    """The store's vectors through the library's pipeline: noisy (stored) and exact documents,
    sent (noisy-store) and clean queries, and the store's space. ``memo`` keeps the distractors'
    vectors per ε (keyed noise depends on the key, ε and the text only: equal in both indexes)."""
    pipe = embedding(eps, enc).pipeline
    n_c = ix["n_corpus"]
    _, noisy, exact = pipe.embed_documents(ix["texts"][:n_c], exact=True)
    memo = {} if memo is None else memo
    if (eps, "distractors") not in memo:
        memo[(eps, "distractors")] = pipe.embed_documents(ix["texts"][n_c:], exact=True)[1:]
    d_noisy, d_exact = memo[(eps, "distractors")]
    sent, clean = pipe.embed_queries(ix["queries"], exact=True)
    return {"noisy": np.vstack([noisy, d_noisy]), "exact": np.vstack([exact, d_exact]), "sent": sent,
            "clean": clean, "space": pipe.space}


def scores(Q: np.ndarray, X: np.ndarray, space: str) -> np.ndarray:
    """−distance of every row of X to every query (float32), in the store's space (Chroma's
    conventions, as :func:`~private_vectors.sealed.rerank.exact_distances`, which checks two rows)."""
    from private_vectors.sealed.rerank import exact_distances

    Q, X = np.asarray(Q, dtype=np.float32), np.asarray(X, dtype=np.float32)
    if space == "cosine":
        unit = lambda m: m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-30)  # noqa: E731
        S = unit(Q) @ unit(X).T - 1.0
    elif space == "ip":
        S = Q @ X.T - 1.0
    else:
        S = 2.0 * (Q @ X.T) - np.sum(X * X, axis=1)[None, :] - np.sum(Q * Q, axis=1)[:, None]
    for r in (0, len(Q) - 1):
        ref = -exact_distances(Q[r], X[:2000], space)
        assert np.allclose(S[r, :2000], ref, atol=1e-4), "scores disagree with exact_distances"
    return S


def noisy_ranks(S_noisy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order: per query the documents by noisy score, best first; rank: each document's position in it)."""
    order = np.argsort(-S_noisy, axis=1, kind="stable")
    rank = np.empty_like(order)
    rows = np.arange(order.shape[0])[:, None]
    rank[rows, order] = np.arange(order.shape[1])[None, :]
    return order, rank


def run_of(top: np.ndarray, S: np.ndarray, ix: dict[str, Any]) -> dict[str, dict[str, float]]:
    ids = ix["doc_ids"]
    return {q: {ids[j]: float(S[r, j]) for j in top[r]} for r, q in enumerate(ix["query_ids"])}


def ndcg10(top: np.ndarray, S: np.ndarray, ix: dict[str, Any]) -> float:
    from private_vectors.eval.metrics import ndcg_at_k

    return ndcg_at_k(run_of(top, S, ix), ix["qrels"], 10)


def topk(S: np.ndarray, k: int) -> np.ndarray:
    part = np.argpartition(-S, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(S, part, axis=1)
    return np.take_along_axis(part, np.argsort(-vals, axis=1, kind="stable"), axis=1)


def reranked_top(E: np.ndarray, rank: np.ndarray, K: int, k: int = 10) -> np.ndarray:
    """The key holder's top ``k`` per query: the best exact scores among the noisy top ``K``."""
    return topk(np.where(rank < K, E, -np.inf), k)


def library_rerank(v: dict[str, Any], order: np.ndarray, K: int, k: int = 10) -> np.ndarray:
    """The same through :func:`private_vectors.sealed.rerank.rerank` on the candidates' exact vectors."""
    from private_vectors.sealed.rerank import rerank

    return np.stack([order[r, :K][rerank(v["clean"][r], v["exact"][order[r, :K]], k, v["space"])[0]]
                     for r in range(order.shape[0])])


def recall_at(rank: np.ndarray, clean_top: np.ndarray, K: int) -> float:
    """Candidate recall@K: the share of the clean top documents inside the noisy top K."""
    return float(np.mean(np.take_along_axis(rank, clean_top, axis=1) < K))



def k_grid(n: int) -> list[int]:
    """The K values measured: KS and a geometric grid from 10 to n."""
    geo = np.unique(np.round(np.geomspace(10, n, 44)).astype(int)).tolist()
    return sorted({*[K for K in KS if n >= K], *geo, n})


def curve(ix: dict[str, Any], S_noisy: np.ndarray, E: np.ndarray, keep: np.ndarray | None,
          Ks: Sequence[int], k: int = 10, ranked: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """Clean and noisy NDCG@10 and, per K, the key holder's NDCG@10 and candidate recall@K (of the
    clean top 5, 10, 20) in the index restricted to the documents ``keep`` (a boolean mask; None:
    all, with ``ranked`` = :func:`noisy_ranks` of ``S_noisy`` when already computed)."""
    if keep is None:
        sub, Sn, Ee = ix, S_noisy, E
        order, rank = ranked if ranked is not None else noisy_ranks(Sn)
    else:
        cols = np.flatnonzero(keep)
        sub = {**ix, "doc_ids": [ix["doc_ids"][j] for j in cols]}
        Sn, Ee = S_noisy[:, cols], E[:, cols]
        order, rank = noisy_ranks(Sn)
    clean_top = {m: topk(Ee, m) for m in (5, 10, 20)}
    n = Sn.shape[1]
    out = {"N": int(n), "clean": ndcg10(clean_top[10], Ee, sub), "noisy": ndcg10(order[:, :k], Sn, sub), "K": {}}
    for K in Ks:
        if n < K:
            continue
        out["K"][int(K)] = {"ndcg10": ndcg10(reranked_top(Ee, rank, K, k), Ee, sub),
                            **{f"recall{m}": recall_at(rank, t, K) for m, t in clean_top.items()}}
    return out


def measure(ix: dict[str, Any], eps: float, enc: Any, *, memo: dict[tuple[float, str], Any] | None = None,
            keep: bool = False) -> tuple[dict[str, Any], Any]:
    """One corpus at one ε, the full index: (its curve, with the library re-rank check; the score
    matrices when ``keep``, for the rule's K and the smaller stores once the rule is fitted)."""
    t0 = time.perf_counter()
    v = vectors(ix, eps, enc, memo)
    S_noisy, E = scores(v["sent"], v["noisy"], v["space"]), scores(v["clean"], v["exact"], v["space"])
    order, rank = noisy_ranks(S_noisy)
    full = curve(ix, S_noisy, E, None, k_grid(len(ix["texts"])), ranked=(order, rank))
    agree = {}
    for K in KS:  # the library's own re-rank gives the same top 10 as the score-matrix shortcut (ties aside)
        lib, short = np.sort(library_rerank(v, order, K), axis=1), np.sort(reranked_top(E, rank, K), axis=1)
        agree[K] = float(np.mean(lib == short))
        assert agree[K] >= 0.97, f"library rerank and shortcut disagree at K={K}: {agree[K]}"
    out = {"eps": eps, "space": v["space"], "full": full, "subsets": {}, "library_rerank_agreement": agree,
           "seconds": round(time.perf_counter() - t0, 1)}
    return out, ((S_noisy, E, order, rank) if keep else None)


def with_rule(m: dict[str, Any], ix: dict[str, Any], mats: Any, fit: dict[str, Any]) -> None:
    """Add the fitted rule's K (and the smaller stores of SUBSETS) to a measured ε of one corpus."""
    S_noisy, E, order, rank = mats
    eps, n = m["eps"], len(ix["texts"])
    K = fitted_count(10, eps, n, fit)
    m["full"]["K"].update(curve(ix, S_noisy, E, None, [K], ranked=(order, rank))["K"])
    for c in [m["full"]]:
        c["rule"] = rule_row(c, K)
    for sub in SUBSETS:
        keep = np.arange(n) < ix["n_corpus"] + sub
        N = int(keep.sum())
        c = m["subsets"][int(sub)] = curve(ix, S_noisy, E, keep, [*k_grid(N), fitted_count(10, eps, N, fit)])
        c["rule"] = rule_row(c, fitted_count(10, eps, N, fit))
    for c in [m["full"], *m["subsets"].values()]:
        c["needed"] = {f"recall{r}": needed(c, "recall10", r) for r in (0.9, 0.95, 0.99)}


# --------------------------------------------------------------------------- store-side query cost
def fill_collections(client: Any, ix: dict[str, Any], eps: float, enc: Any, db: Path, batch: int = 4000) -> dict[str, Any]:
    """Two Chroma collections over the same noisy vectors of the whole index: ``clear`` (the text
    readable, as an unsealed store keeps it) and ``sealed`` (keyed markers, one record per
    document with the text and the exact vector, as the sealed paths write it)."""
    from private_vectors.sealed import SEALED_KEY, Sealer

    ef = embedding(eps, enc)
    pipe = ef.pipeline
    n, space = len(ix["texts"]), pipe.space
    saved = db / f"embedding-config-eps{eps:g}.json"  # the wrapped data key and salt (never the key)
    names = {kind: f"{kind}-eps{eps:g}" for kind in ("clear", "sealed")}
    done = saved.exists() and all(_count(client, nm) == n for nm in names.values())
    if done:
        pipe.bind(json.loads(saved.read_text()), "the benchmark store")
    else:
        for nm in names.values():
            if _count(client, nm) is not None:
                client.delete_collection(nm)
    _, noisy, exact = pipe.embed_documents(ix["texts"], exact=True)
    sealer = Sealer.for_embedding(ef)
    saved.write_text(json.dumps(ef.get_config()))
    cols = {kind: client.get_or_create_collection(nm, embedding_function=None,
                                                  configuration={"hnsw": {"space": space}}) for kind, nm in names.items()}
    t0 = time.perf_counter()
    for kind, col in cols.items():
        if done:
            continue
        for s in range(0, n, batch):
            ids, texts = ix["doc_ids"][s:s + batch], ix["texts"][s:s + batch]
            if kind == "clear":
                col.add(ids=ids, embeddings=noisy[s:s + batch], documents=texts)
            else:
                records = sealer.seal_many(ids, texts=texts, metadatas=None, vectors=exact[s:s + batch])
                col.add(ids=[sealer.stored_id(i) for i in ids], embeddings=noisy[s:s + batch],
                        documents=[sealer.marker(t) for t in texts], metadatas=[{SEALED_KEY: r} for r in records])
            print(f"[cost] {kind}: {min(s + batch, n)}/{n} added, {time.perf_counter() - t0:.0f} s", flush=True)
    return {"cols": cols, "sealer": sealer, "space": space, "pipe": pipe}


def _count(client: Any, name: str) -> int | None:
    try:
        return client.get_collection(name).count()
    except Exception:  # (chromadb raises NotFoundError or ValueError by version)
        return None


def sealed_query(col: Any, sealer: Any, sent: np.ndarray, clean: np.ndarray, K: int, k: int, space: str) -> list[str]:
    """The key holder's read: one query for K candidates, their records opened, re-ranked, top k
    (the library's :func:`~private_vectors.sealed.stores.open_ranked`)."""
    from private_vectors.sealed import SEALED_KEY
    from private_vectors.sealed.stores import open_ranked

    res = col.query(query_embeddings=sent[None, :], n_results=K, include=["metadatas"])
    ranked = open_ranked(sealer, res["ids"][0], [m[SEALED_KEY] for m in res["metadatas"][0]], clean, k, space)
    return [p.text for _, p, _ in ranked]


def chroma_ndcg(state: dict[str, Any], ix: dict[str, Any], sent: np.ndarray, clean: np.ndarray, K: int,
                k: int = 10) -> dict[str, float]:
    """NDCG@10 of every query through the Chroma collections (HNSW): the unsealed store's top k
    and the key holder's sealed read at K."""
    from private_vectors.eval.metrics import ndcg_at_k
    from private_vectors.sealed import SEALED_KEY
    from private_vectors.sealed.rerank import rerank

    cols, sealer, space = state["cols"], state["sealer"], state["space"]
    noisy_run, sealed_run = {}, {}
    for r, qid in enumerate(ix["query_ids"]):
        res = cols["clear"].query(query_embeddings=sent[r][None, :], n_results=k, include=["distances"])
        noisy_run[qid] = {d: -float(x) for d, x in zip(res["ids"][0], res["distances"][0], strict=True)}
        res = cols["sealed"].query(query_embeddings=sent[r][None, :], n_results=K, include=["metadatas"])
        opened = sealer.open_records(res["ids"][0], [m[SEALED_KEY] for m in res["metadatas"][0]])
        order, dist = rerank(clean[r], opened.vectors, k, space)
        sealed_run[qid] = {opened.payload(int(j)).doc_id: -float(d) for j, d in zip(order, dist, strict=True)}
    return {"K": K, "noisy_hnsw": round(ndcg_at_k(noisy_run, ix["qrels"], 10), 4),
            "key_holder_hnsw": round(ndcg_at_k(sealed_run, ix["qrels"], 10), 4)}


def clear_query(col: Any, sent: np.ndarray, k: int) -> list[str]:
    """An unsealed store's read: one query for k, documents and distances."""
    return col.query(query_embeddings=sent[None, :], n_results=k, include=["documents", "metadatas", "distances"])[
        "documents"][0]


BIG_K = 5_000  # a sealed read of more candidates is timed on 5 queries, once each


def keyholder_cold(state: dict[str, Any], sent: np.ndarray, clean: np.ndarray, K: int, k: int) -> list[Any]:
    """The key holder's cold read (the library's path when its exact-vector cache holds little):
    the cache emptied, one query for K with the records, all opened (their vectors cached), re-rank."""
    from private_vectors.integrations.chroma_cached import ranked_cold

    state["cache"].clear()
    res = state["cols"]["sealed"].query(query_embeddings=sent[None, :], n_results=K, include=["metadatas"])
    return ranked_cold(state["sealer"], state["cache"], res["ids"][0], res["metadatas"][0], clean, k, state["space"])


def keyholder_warm(state: dict[str, Any], sent: np.ndarray, clean: np.ndarray, K: int, k: int) -> list[Any]:
    """The key holder's warm read: one ids-only query for K, a re-rank by the cached exact
    vectors (the candidates not cached fetched and opened), one get of the k kept."""
    from private_vectors.integrations.chroma_cached import ranked_warm

    return ranked_warm(state["cols"]["sealed"], state["sealer"], state["cache"], sent[None, :], clean[None, :], K, k,
                       None, state["space"])[0]


def _same_results(a: list[Any], b: list[Any]) -> bool:
    return [p.doc_id for p, _ in a] == [p.doc_id for p, _ in b] and bool(
        np.allclose([d for _, d in a], [d for _, d in b], rtol=0, atol=1e-9))


def time_queries(state: dict[str, Any], sent: np.ndarray, clean: np.ndarray, Ks: Sequence[int], k: int = 10,
                 repeats: int = 3) -> dict[str, Any]:
    """Median ms per query (each query timed alone, the best of ``repeats`` rounds over the query
    set, interleaved per query: unsealed, then at each K the sealed read without a cache, the
    key holder's cold read and right after it the warm read of the same query) of each read."""
    cols, sealer, space = state["cols"], state["sealer"], state["space"]
    small = [K for K in Ks if K <= BIG_K]
    for q in range(min(5, len(sent))):  # warm both collections (HNSW loaded, sqlite pages cached)
        clear_query(cols["clear"], sent[q], k)
        sealed_query(cols["sealed"], sealer, sent[q], clean[q], max(small, default=k), k, space)
    reads = {"none": lambda q, K: sealed_query(cols["sealed"], sealer, sent[q], clean[q], K, k, space),
             "cold": lambda q, K: keyholder_cold(state, sent[q], clean[q], K, k),
             "warm": lambda q, K: keyholder_warm(state, sent[q], clean[q], K, k)}
    best = {"clear": np.full(len(sent), np.inf),
            **{(K, r): np.full(len(sent), np.inf) for K in Ks for r in reads}}
    agree = True
    for rnd in range(repeats):
        for q in range(len(sent)):
            t = time.perf_counter()
            clear_query(cols["clear"], sent[q], k)
            best["clear"][q] = min(best["clear"][q], time.perf_counter() - t)
            for K in Ks:
                if K > BIG_K and (rnd or q >= 5):
                    continue
                got = {}
                for r, read in reads.items():
                    t = time.perf_counter()
                    got[r] = read(q, K)
                    best[K, r][q] = min(best[K, r][q], time.perf_counter() - t)
                agree = agree and _same_results(got["cold"], got["warm"])
    clear_ms = float(np.median(best["clear"]) * 1e3)
    sealed = {}
    for K in Ks:
        row: dict[str, Any] = {"queries": int(np.isfinite(best[K, "none"]).sum())}
        for r in reads:
            ms = float(np.median(best[K, r][np.isfinite(best[K, r])]) * 1e3)
            row[r] = {"ms": round(ms, 2), "ratio": round(ms / clear_ms, 2)}
        row["ms"], row["ratio"] = row["none"]["ms"], row["none"]["ratio"]
        sealed[int(K)] = row
    return {"clear_ms": round(clear_ms, 2), "queries": len(sent), "repeats": repeats, "sealed": sealed,
            "warm_matches_cold": agree}


def held_out(state: dict[str, Any], sent: np.ndarray, clean: np.ndarray, fill: tuple[np.ndarray, np.ndarray],
             K: int, k: int = 10) -> dict[str, Any]:
    """The key holder's read through the library's choice (:func:`~private_vectors.integrations.chroma_sealed.ranked_results`)
    of queries it has not seen, once each (interleaved with the unsealed read), after the cache
    (default budget) was filled by ``fill`` (the other queries, read the same way)."""
    from private_vectors.integrations.chroma_cached import is_warm
    from private_vectors.integrations.chroma_sealed import ranked_results

    col, cache, n = state["cols"]["sealed"], state["cache"], state["n"]
    read = lambda s, c: ranked_results(col, state["sealer"], s[None, :], c[None, :], K, k, None, state["space"])  # noqa: E731
    cache.clear()
    t0 = time.perf_counter()
    for s, c in zip(*fill, strict=True):
        read(s, c)
    fill_s = time.perf_counter() - t0
    clear_t, sealed_t, hits, warm = [], [], [], 0
    for q in range(len(sent)):
        t = time.perf_counter()
        clear_query(state["cols"]["clear"], sent[q], k)
        clear_t.append(time.perf_counter() - t)
        ids = col.query(query_embeddings=sent[q][None, :], n_results=K, include=[])["ids"][0]
        hits.append(cache.held(ids, observe=False) / max(len(ids), 1))
        warm += is_warm(cache, n)
        t = time.perf_counter()
        read(sent[q], clean[q])
        sealed_t.append(time.perf_counter() - t)
    clear_ms, ms = float(np.median(clear_t) * 1e3), float(np.median(sealed_t) * 1e3)
    return {"K": K, "fill_queries": len(fill[0]), "fill_s": round(fill_s, 1), "cached": len(cache),
            "cache_bytes": cache.nbytes, "budget": cache.budget, "hit_rate": round(float(np.median(hits)), 3),
            "warm_reads": warm, "queries": len(sent), "clear_ms": round(clear_ms, 2), "ms": round(ms, 2),
            "ratio": round(ms / clear_ms, 2)}


def stage_split(state: dict[str, Any], sent: np.ndarray, clean: np.ndarray, K: int, k: int = 10) -> dict[str, float]:
    """Median ms per query of the sealed read's stages at K: the store query, opening (every
    record authenticated, the exact vectors read), re-ranking (and parsing the k kept); and of
    the warm read's two store calls: the ids-only query for K, the get of the k kept."""
    from private_vectors.sealed import SEALED_KEY
    from private_vectors.sealed.rerank import rerank

    col, sealer, space = state["cols"]["sealed"], state["sealer"], state["space"]
    times: dict[str, list[float]] = {"query_fetch": [], "open": [], "rerank": [], "ids_query": [], "get_k": []}
    for q in range(len(sent) if K <= BIG_K else min(5, len(sent))):
        t0 = time.perf_counter()
        res = col.query(query_embeddings=sent[q][None, :], n_results=K, include=["metadatas"])
        t1 = time.perf_counter()
        opened = sealer.open_records(res["ids"][0], [m[SEALED_KEY] for m in res["metadatas"][0]])
        vecs = opened.vectors
        t2 = time.perf_counter()
        order, _ = rerank(clean[q], vecs, k, space)
        [opened.payload(int(j)) for j in order]
        t3 = time.perf_counter()
        col.query(query_embeddings=sent[q][None, :], n_results=K, include=[])
        t4 = time.perf_counter()
        col.get(ids=[res["ids"][0][int(j)] for j in order], include=["metadatas"])
        t5 = time.perf_counter()
        for name, dt in (("query_fetch", t1 - t0), ("open", t2 - t1), ("rerank", t3 - t2), ("ids_query", t4 - t3),
                         ("get_k", t5 - t4)):
            times[name].append(dt)
    return {name: round(float(np.median(v)) * 1e3, 2) for name, v in times.items()}


def start_server(path: Path, port: int) -> Any:
    """``chroma run`` on ``path`` at ``port`` (localhost); the process, once it answers a heartbeat."""
    import subprocess
    import urllib.request

    exe = Path(sys.executable).parent / "chroma"
    log = (path.parent / f"chroma-server-{port}.log").open("w")
    proc = subprocess.Popen([str(exe), "run", "--path", str(path), "--port", str(port), "--host", "localhost"],
                            stdout=log, stderr=subprocess.STDOUT)
    for _ in range(240):
        if proc.poll() is not None:
            raise RuntimeError(f"chroma run exited with {proc.returncode}; see {log.name}")
        try:
            urllib.request.urlopen(f"http://localhost:{port}/api/v2/heartbeat", timeout=1)
            return proc
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError("chroma run did not answer within 120 s")


def cost(ix: dict[str, Any], eps: float, enc: Any, Ks: Sequence[int], db: Path, n_queries: int,
         port: int, rule_k: int) -> dict[str, Any]:
    """Store-side query cost on a native PersistentClient, then through HttpClient against ``chroma run``."""
    import chromadb

    from private_vectors.integrations.chroma_cached import cache_of

    all_sent, all_clean = embedding(eps, enc).pipeline.embed_queries(ix["queries"], exact=True)
    q_sent, q_clean = all_sent[:n_queries], all_clean[:n_queries]
    fill = (all_sent[n_queries:], all_clean[n_queries:])
    client = chromadb.PersistentClient(path=str(db))
    state = fill_collections(client, ix, eps, enc, db)
    state["cache"], state["n"] = cache_of(state["sealer"], state["cols"]["sealed"]), len(ix["texts"])
    out: dict[str, Any] = {"eps": eps, "N": len(ix["texts"]), "k": 10, "space": state["space"],
                           "chromadb": chromadb.__version__, "vector": state["sealer"].sealing.vector}
    out["persistent"] = time_queries(state, q_sent, q_clean, Ks)
    out["persistent"]["stages_ms"] = {int(K): stage_split(state, q_sent, q_clean, K) for K in Ks}
    out["persistent"]["held_out"] = held_out(state, q_sent, q_clean, fill, rule_k)
    print(f"[cost] persistent: {out['persistent']}", flush=True)
    out["hnsw_ndcg10"] = chroma_ndcg(state, ix, all_sent, all_clean, rule_k)
    print(f"[cost] through HNSW: {out['hnsw_ndcg10']}", flush=True)
    sealer = state["sealer"]
    del client, state
    try:
        proc = start_server(db, port)
    except (OSError, RuntimeError) as exc:
        out["http"] = {"blocked": f"{type(exc).__name__}: {exc}"}
        return out
    try:
        http = chromadb.HttpClient(host="localhost", port=port)
        state = {"cols": {kind: http.get_collection(f"{kind}-eps{eps:g}") for kind in ("clear", "sealed")},
                 "sealer": sealer, "space": out["space"], "n": out["N"]}
        state["cache"] = cache_of(sealer, state["cols"]["sealed"])
        out["http"] = time_queries(state, q_sent, q_clean, Ks)
        out["http"]["stages_ms"] = {int(K): stage_split(state, q_sent, q_clean, K) for K in Ks}
        out["http"]["held_out"] = held_out(state, q_sent, q_clean, fill, rule_k)
        print(f"[cost] http: {out['http']}", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


# --------------------------------------------------------------------------- the K rule
def needed(curve_: dict[str, Any], key: str, level: float) -> int | None:
    """The smallest measured K whose ``key`` (e.g. recall10) reaches ``level``."""
    for K in sorted(curve_["K"], key=int):
        if curve_["K"][K][key] >= level:
            return int(K)
    return None


def needed_ratio(curve_: dict[str, Any], level: float) -> int | None:
    """The smallest measured K whose key-holder NDCG@10 reaches ``level`` × clean."""
    for K in sorted(curve_["K"], key=int):
        if curve_["K"][K]["ndcg10"] >= level * curve_["clean"]:
            return int(K)
    return None


def fit_rule(fine: dict[float, dict[str, Any]], aim: float) -> dict[str, Any]:
    """Probit fit of the share of the index the key holder needs (the smallest K whose key-holder
    NDCG@10 reaches ``aim`` × clean, over N) against ε: Φ⁻¹(K/N) = z − a·ε. Ranked by
    cosine against a query, a document's noisy score is its clean score plus about N(0, 1/ε²)
    (Laplace noise of norm √n/ε projected on one unit direction), so a clean top document at a gap
    Δ above the bulk of the index is passed by a share Φ(−εΔ + …) of it."""
    from scipy.stats import norm

    pts = [(eps, needed_ratio(c, aim) / c["N"]) for eps, c in sorted(fine.items()) if needed_ratio(c, aim) is not None]
    x = np.array([e for e, _ in pts])
    y = norm.ppf(np.clip([f for _, f in pts], 1e-9, 1 - 1e-9))
    slope, z = np.polyfit(x, y, 1)
    return {"aim": aim, "z": round(float(z), 3), "a": round(float(-slope), 4),
            "points": [{"eps": e, "share": round(f, 6)} for e, f in pts]}


def fitted_count(k: int, eps: float, n: int, fit: dict[str, Any]) -> int:
    """The rule of :func:`private_vectors.sealed.candidate_count` with the fitted constants:
    min(n, max(10 k, 200, ceil(k/10 · n · Φ(z − a·ε))))."""
    import math

    share = 0.5 * math.erfc(-(fit["z"] - fit["a"] * eps) / math.sqrt(2.0))
    return min(n, max(10 * k, 200, math.ceil(k / 10 * n * share)))


def rule_row(c: dict[str, Any], K: int) -> dict[str, Any]:
    row = c["K"].get(K) or c["K"].get(str(K))
    return {"K": K, "K_over_N": round(K / c["N"], 5), **{m: round(v, 4) for m, v in row.items()},
            "ratio": round(row["ndcg10"] / c["clean"], 4)}



# --------------------------------------------------------------------------- the whole retrieval part
FIT_CORPUS, CHECK_CORPUS = "scifact", "nfcorpus"
FINE_EPS = (5.0, 7.0, 10.0, 14.0, 20.0)
SUBSETS = (0, 25_000, 50_000)
RECALL = 0.95  # reported: the K at which the noisy top K holds 95 % of the clean top 10 (mean over queries)
AIM = 0.98  # the rule's aim: key-holder NDCG@10 at least 0.98 x clean (the issue asks 0.97 x at eps 10)


def _header(ix: dict[str, Any]) -> dict[str, Any]:
    return {"N": len(ix["texts"]), "n_corpus": ix["n_corpus"], "n_distractors": len(ix["texts"]) - ix["n_corpus"],
            "n_queries": len(ix["queries"]), "distractor_sources": ix["distractor_sources"], "eps": {}}


def _say(name: str, m: dict[str, Any]) -> None:
    full = m["full"]
    print(f"[{name} eps={m['eps']:g}] N={full['N']} clean {full['clean']:.3f} noisy {full['noisy']:.3f} "
          f"K=200 {full['K'][200]['ndcg10']:.3f} needed(recall {RECALL}) {needed(full, 'recall10', RECALL)} "
          f"({m['seconds']} s)", flush=True)


def retrieval(indexes: dict[str, dict[str, Any]], enc: Any) -> dict[str, Any]:
    """FIT_CORPUS at every ε of FINE_EPS and CHECK_CORPUS at EPS (full indexes); the rule fitted on
    FIT_CORPUS; then, at EPS, both corpora at the fitted rule's K and in smaller stores (SUBSETS)."""
    res: dict[str, Any] = {"corpora": {n: _header(ix) for n, ix in indexes.items()}, "fit_corpus": FIT_CORPUS,
                           "check_corpus": CHECK_CORPUS, "recall": RECALL, "aim": AIM}
    kept = {}
    for eps in FINE_EPS:
        memo: dict[tuple[float, str], Any] = {}
        for name, ix in indexes.items():
            if name != FIT_CORPUS and eps not in EPS:
                continue
            m, mats = measure(ix, eps, enc, memo=memo, keep=eps in EPS)
            res["corpora"][name]["eps"][f"{eps:g}"] = m
            _say(name, m)
            if mats is not None:
                kept[(name, eps)] = mats
    fine = {float(e): m["full"] for e, m in res["corpora"][FIT_CORPUS]["eps"].items()}
    res["fit"] = fit = fit_rule(fine, AIM)
    print(f"[fit] {fit}", flush=True)
    for (name, eps), mats in kept.items():
        m = res["corpora"][name]["eps"][f"{eps:g}"]
        with_rule(m, indexes[name], mats, fit)
        print(f"[{name} eps={eps:g}] rule {m['full']['rule']}", flush=True)
    return res


def refit(r: dict[str, Any]) -> None:
    """Fit the rule again on the stored curves of ``r`` (a results.json retrieval part) and give
    each measured store the rule's result at the largest measured K at or below the rule's K
    (``grid_K``: the curves hold the geometric grid, not the new rule's K; NDCG@10 grows with K,
    so the row is a lower bound; ``--parts retrieval`` measures the exact K)."""
    fine = {float(e): m["full"] for e, m in r["corpora"][FIT_CORPUS]["eps"].items()}
    r["fit"] = fit = fit_rule(fine, AIM)
    r["aim"] = AIM
    for b in r["corpora"].values():
        for e, m in b["eps"].items():
            for c in [m["full"], *m["subsets"].values()]:
                K = fitted_count(10, float(e), c["N"], fit)
                grid = max(int(x) for x in c["K"] if int(x) <= K)
                c["rule"] = {**rule_row(c, grid), "K": K, "K_over_N": round(K / c["N"], 5), "grid_K": grid}


# --------------------------------------------------------------------------- writing
def _git_sha() -> str:
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_readme(path: Path, res: dict[str, Any]) -> None:
    """The short table of ``results.json``."""
    r = res.get("retrieval")
    runs: dict[str, list[str]] = {}
    for part, run in res.get("runs", {}).items():
        runs.setdefault(f"`{run['command']}` at git `{run['git']}` ({run['seconds']} s, {run['machine']})", []).append(part)
    lines = ["# Sealed stores: key-holder retrieval with 100,000 distractor vectors", "",
             *[f"- {', '.join(parts)}: {text}" for text, parts in runs.items()],
             "", "(The retrieval part ran benchmarks/sealed_retrieval.py of 8d802efa, recorded with the HEAD of "
             "when it was saved; its rows at the rule's K are read from its stored curves by `--parts refit`. "
             "Seconds: since the start of each run. Before the refit and `Sealer.open_records`, at K = 3,553, "
             "the sealed query took 31.7× (persistent) and 34.6× (http) an unsealed one: git history of this "
             "page.)", "",
             "Library pipeline: `PrivateEmbedding(eps=ε, key=...)`, packaged all-MiniLM-L6-v2, Laplace, default "
             "geometry (cosine, unit-norm noisy vectors), no text stage; clean queries. NDCG@10 on the BEIR test "
             "queries; \"clean\" = the same store without noise (exact vectors); \"key holder\" = the noisy top K "
             "re-ranked by the exact vectors; recall@K = share of the clean top 10 inside the noisy top K. Rankings "
             "by brute force in the store's space (what HNSW approximates).", ""]
    if r:
        for name, b in r["corpora"].items():
            src = ", ".join(f"{k} {v:,}" for k, v in b["distractor_sources"].items())
            lines += [f"## {name}: {b['n_corpus']:,} documents + {b['n_distractors']:,} distractors "
                      f"(N = {b['N']:,}), {b['n_queries']} queries", "", f"Distractors: {src}.", "",
                      "| ε | clean | noisy | " + " | ".join(f"K={K}" for K in KS) +
                      " | rule K (K/N) | key holder at rule K (× clean) | recall@K at rule K |",
                      "|---" * (6 + len(KS)) + "|"]
            for e in (f"{x:g}" for x in EPS):
                c = b["eps"][e]["full"]
                at = {K: c["K"].get(K) or c["K"][str(K)] for K in KS}  # (str keys once read from JSON)
                cells = [f"{at[K]['ndcg10']:.3f} ({at[K]['ndcg10'] / c['clean']:.2f}×, R {at[K]['recall10']:.2f})"
                         for K in KS]
                rr = c["rule"]
                lines.append(f"| {e} | {c['clean']:.3f} | {c['noisy']:.3f} | " + " | ".join(cells) +
                             f" | {rr['K']:,} ({rr['K_over_N']:.4f}) | {rr['ndcg10']:.3f} ({rr['ratio']:.3f}×) | "
                             f"{rr['recall10']:.3f} |")
            lines += ["", "Cells: NDCG@10 (× clean, R = candidate recall@K). K/N of the fixed K: " +
                      ", ".join(f"{K} = {K / b['N']:.4f}" for K in KS) + ".", "",
                      "By store size (the corpus with the first m distractors): the K at which recall@K of the "
                      "clean top 10 first reaches 0.95 on the measured grid, and the rule's K with its result.", "",
                      "| ε | N | K for recall 0.95 (K/N) | rule K | recall@K at rule K | key holder at rule K (× clean) |",
                      "|---|---|---|---|---|---|"]
            for e in (f"{x:g}" for x in EPS):
                m = b["eps"][e]
                for c in [*m["subsets"].values(), m["full"]]:
                    nd, rr = c["needed"]["recall0.95"], c["rule"]
                    need = f"{nd:,} ({nd / c['N']:.4f})" if nd else "—"
                    lines.append(f"| {e} | {c['N']:,} | {need} | {rr['K']:,} | {rr['recall10']:.3f} | "
                                 f"{rr['ndcg10']:.3f} ({rr['ratio']:.3f}×) |")
            lines.append("")
    if r:
        f = r["fit"]
        lines += ["## The K rule", "",
                  f"Fitted on {r['fit_corpus']} (full index, ε in {', '.join(f'{e:g}' for e in FINE_EPS)}), "
                  f"checked on {r['check_corpus']} above: the share of the index at which the key holder's NDCG@10 "
                  f"first reaches {f.get('aim')} × clean on the grid, against ε, fitted as Φ⁻¹(K/N) = z − a·ε: "
                  f"z = {f['z']}, a = {f['a']} (points: " +
                  ", ".join(f"ε {p['eps']:g}: {p['share']:.5f}" for p in f["points"]) + "). Rule: K = min(N, "
                  "max(10 k, 200, ceil(k/10 · N · Φ(z − a·ε)))), `private_vectors.sealed.candidate_count`" +
                  (" (its constants are these)." if library_agrees(r) else
                   " — **the library's constants differ from this fit**.") +
                  (" Rows at the rule's K read the stored curve at the largest measured K at or below it (a lower "
                   "bound: `--parts refit`); `--parts retrieval` measures the rule's exact K." if any(
                       "grid_K" in m["full"].get("rule", {}) for b in r["corpora"].values() for m in b["eps"].values())
                   else ""), ""]
    if res.get("cost"):
        lines += cost_lines(res["cost"])
    path.write_text("\n".join(lines) + "\n")


def library_agrees(r: dict[str, Any]) -> bool:
    """Whether :func:`private_vectors.sealed.candidate_count` gives the fitted rule's K everywhere measured."""
    from private_vectors.sealed import candidate_count

    return all(c["rule"]["K"] == candidate_count(10, float(e), c["N"])
               for b in r["corpora"].values() for e, m in b["eps"].items()
               for c in [m["full"], *m["subsets"].values()] if "rule" in c)


def _cost_row(client: str, t: dict[str, Any], K: Any, row: dict[str, Any]) -> str:
    st = t["stages_ms"][K] if K in t["stages_ms"] else t["stages_ms"][str(K)]
    if "cold" not in row:  # (a run from before the key holder's cache: the uncached read only)
        return (f"| {client} | {t['clear_ms']:.1f} | {int(K):,} | {row['ms']:.1f} ({row['ratio']:.2f}×) | | | "
                f"{st['query_fetch']:.1f} / {st['open']:.1f} / {st['rerank']:.1f} | |")
    return (f"| {client} | {t['clear_ms']:.1f} | {int(K):,} | {row['none']['ms']:.1f} ({row['none']['ratio']:.2f}×) | "
            f"{row['cold']['ms']:.1f} ({row['cold']['ratio']:.2f}×) | {row['warm']['ms']:.1f} "
            f"({row['warm']['ratio']:.2f}×) | {st['query_fetch']:.1f} / {st['open']:.1f} / {st['rerank']:.1f} | "
            f"{st.get('ids_query', float('nan')):.1f} / {st.get('get_k', float('nan')):.1f} |")


def _held_out_lines(c: dict[str, Any]) -> list[str]:
    out = []
    for client in ("persistent", "http"):
        h = (c.get(client) or {}).get("held_out")
        if h:
            out.append(f"- {client}: {h['ms']:.1f} ms against {h['clear_ms']:.1f} unsealed ({h['ratio']:.2f}×; K = "
                       f"{h['K']:,}; median hit rate {h['hit_rate']:.2f}, {h['warm_reads']} of {h['queries']} reads "
                       f"warm; the cache held {h['cached']:,} vectors, {h['cache_bytes'] / 2**20:.1f} of "
                       f"{h['budget'] / 2**20:.0f} MiB, after {h['fill_queries']} queries in {h['fill_s']:.0f} s)")
    if not out:
        return []
    return ["", "Queries the key holder has not asked before, once each, through the library's choice of read "
            "(`chroma_sealed.ranked_results`), after the other queries of the corpus filled the exact-vector cache "
            "(default budget):", "", *out]


def cost_lines(c: dict[str, Any]) -> list[str]:
    out = [f"## Store-side query cost (chromadb {c['chromadb']}, {c['index']}, N = {c['N']:,}, ε = {c['eps']:g}, k = 10)",
           "", "Median ms per query (best of the repeats per query; × unsealed in brackets): unsealed = one query "
           "for k with documents; no cache = one query for K with the records, every record opened, re-rank "
           "(`sealed.stores.open_ranked`); cold = the key holder's read with its exact-vector cache emptied "
           "first (`integrations.chroma_cached.ranked_cold`: as no cache, the vectors then cached); warm = the "
           "same query right after (`ranked_warm`: one ids-only query for K, a re-rank by the cached exact "
           "vectors, one get of the k kept, each opened and checked against the vector that ranked it). "
           "Interleaved per query in one run. Stages (median ms, one more pass): the uncached read's "
           "query+fetch / open / re-rank, and the warm read's ids-only query / get of k. Timed on collections "
           "written as the sealed paths write them, without `private_vectors.chroma.query`'s query embedding "
           "and its `count()` (at most every 10 s).", "",
           "| client | unsealed ms | K | no cache | cold | warm | query+fetch / open / re-rank | ids query / get k |",
           "|---|---|---|---|---|---|---|---|"]
    for client in ("persistent", "http"):
        t = c.get(client) or {}
        if "blocked" in t:
            out.append(f"| {client} | blocked: {t['blocked']} | | | | | | |")
            continue
        out += [_cost_row(client, t, K, row) for K, row in t.get("sealed", {}).items()]
    agree = [(c.get(cl) or {}).get("warm_matches_cold") for cl in ("persistent", "http")]
    if any(a is not None for a in agree):
        out += ["", "Warm reads returned the same ids, order and distances as cold reads of the same query: "
                + ("yes, every query" if all(a is not False for a in agree) else "NO (see results.json)") + "."]
    out += _held_out_lines(c)
    h = c.get("hnsw_ndcg10")
    if h:
        out += ["", f"Through the Chroma HNSW index (all queries): unsealed noisy NDCG@10 {h['noisy_hnsw']:.3f}, "
                f"key holder at the rule's K = {h['K']:,}: {h['key_holder_hnsw']:.3f}."]
    return [*out, ""]


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--cache-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "pv_sealed_retrieval")
    ap.add_argument("--parts", nargs="+", default=["retrieval"], choices=["encode", "retrieval", "cost", "readme", "refit"])
    ap.add_argument("--cost-queries", type=int, default=30)
    ap.add_argument("--cost-eps", type=float, default=10.0)
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (on a busy machine one is faster)")
    ap.add_argument("--encode-worker", default="0/1", help="i/m: encode only every m-th distractor chunk, then exit")
    args = ap.parse_args(argv)
    import torch

    global WORKER
    WORKER = tuple(int(x) for x in args.encode_worker.split("/"))  # type: ignore[assignment]
    torch.set_num_threads(args.threads)
    from private_vectors.encoders import load_encoder
    from private_vectors.eval.cache import CachingEncoder

    start = time.perf_counter()
    if args.parts == ["readme"]:  # the page again from results.json (e.g. once the library's constants are the fit's)
        write_readme(args.out / "README.md", json.loads((args.out / "results.json").read_text()))
        return 0
    if args.parts == ["refit"]:  # the rule fitted again on the stored curves (no encoder needed)
        res = json.loads((args.out / "results.json").read_text())
        refit(res["retrieval"])
        res.setdefault("runs", {})["refit"] = {"command": "nice -n 10 .venv/bin/python benchmarks/sealed_retrieval.py "
                                               "--parts refit", "git": _git_sha(), "seconds": 0, "machine": "-"}
        (args.out / "results.json").write_text(json.dumps(res, indent=1) + "\n")
        write_readme(args.out / "README.md", res)
        return 0
    enc = CachingEncoder(load_encoder(None), cache_dir=args.cache_dir)
    indexes = build_indexes(args.data, enc)
    for name, ix in indexes.items():
        print(f"{name}: N = {len(ix['texts'])} ({ix['n_corpus']} documents), distractors {ix['distractor_sources']}")
    if args.parts == ["encode"]:
        return 0
    results = args.out / "results.json"
    res = json.loads(results.read_text()) if results.exists() else {}
    cmd = "nice -n 10 .venv/bin/python benchmarks/sealed_retrieval.py " + " ".join(
        argv if argv is not None else sys.argv[1:])

    sha = _git_sha()  # the checkout the run started from

    def save(part: str) -> None:
        res.setdefault("runs", {})[part] = {
            "command": cmd, "git": sha, "seconds": round(time.perf_counter() - start),
            "machine": f"{os.cpu_count()} CPU cores shared with other jobs (load {os.getloadavg()[0]:.1f} at the end)"}
        args.out.mkdir(parents=True, exist_ok=True)
        results.write_text(json.dumps(res, indent=1) + "\n")

    if "retrieval" in args.parts:
        res["retrieval"] = retrieval(indexes, enc)
        save("retrieval")
    if "cost" in args.parts:
        from private_vectors.sealed import candidate_count

        ix = indexes[FIT_CORPUS]
        n = len(ix["texts"])
        rule = lambda e: candidate_count(10, e, n)  # noqa: E731 - the library's rule
        Ks = sorted({100, 1000, *(rule(e) for e in EPS)})
        res["cost"] = cost(ix, args.cost_eps, enc, Ks, args.cache_dir / "chroma", args.cost_queries, args.port,
                           rule(args.cost_eps))
        res["cost"]["index"] = FIT_CORPUS
        save("cost")
    write_readme(args.out / "README.md", res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
