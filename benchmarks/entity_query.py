"""Entity queries through the real stores: what the key holder keeps with keyed surrogates.

The entity-retrieval corpus (`private_vectors.eval.entity`: presidio-research templates ×
FakeNameGenerator identities, Zipf-distributed owners, fixed seed) is ingested through
`private_vectors.integrations.langchain.chroma_store` with the default model, once per
setting: sanitize = None / "redact" / "surrogate" (with a key) × {ε = 10, no noise}. For every
setting it reports

* NDCG@10 and the top-1 rate (first hit relevant) of the queries naming a person
  ("What do the records say about <name>?", "<name>'s phone number"), and of the city queries;
* the fraction of stored documents (`collection.get(include=["documents"])`) that still hold a
  raw name of their person (full name; and any of given name / surname as a whole word);

and, in a plain LangChain `Chroma(embedding_function=PrivateEmbedding(concept="PII", eps=10,
key=..., sanitize="surrogate"))` store (the headline line), the share of "What do the records
say about <person>?" queries whose first hit is one of that person's documents.

Noise is keyed (a fixed benchmark key and, per repeat, a public salt ``repeat_salt(r)``), so each
document's vector is reproducible; ``--repeats R`` averages R noise draws (one draw moved the
headline first-hit rate by 16 points between two runs before salts were fixed).

    nice .venv/bin/python benchmarks/entity_query.py --data ../shared/data --n-docs 500 --n-identities 150 \
        --n-person-queries 120 --n-city-queries 20 --repeats 5 --out benchmarks/results/entity_query.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

BENCH_KEY = "entity-query-benchmark-key (not a secret)"
KEY = [BENCH_KEY]  # --key replaces it (other keys draw other surrogate names)


SALT: list[bytes | None] = [None]  # the public scrypt salt of this repeat's keyed noise


def repeat_salt(repeat: int) -> bytes:
    """The public salt of repeat ``repeat``: each repeat is another, reproducible noise draw."""
    return hashlib.sha256(f"entity-query benchmark salt, repeat {int(repeat)}".encode()).digest()[:16]


def _embedding(sanitize: str | None, noise: bool, encoder: Any) -> Any:
    from private_vectors import PrivateEmbedding

    kw: dict[str, Any] = {"concept": "PII", "eps": 10.0, "key": KEY[0], "model": encoder, "key_salt": SALT[0]}
    if not noise:
        kw["mechanism"] = "none"
    kw["sanitize"] = sanitize
    return PrivateEmbedding(**kw)


def _search(store: Any, queries: dict[str, str], k: int) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for qid, text in queries.items():
        hits = store.similarity_search_with_score(text, k=k)
        # rank order is what counts: score = k - rank (Chroma returns distances, best first)
        run[qid] = {doc.id: float(k - r) for r, (doc, _) in enumerate(hits)}
    return run


def _top1(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> float:
    firsts = [max(r, key=r.__getitem__) if r else None for r in run.values()]
    return sum(1 for q, f in zip(run, firsts, strict=True) if f is not None and qrels[q].get(f, 0) > 0) / len(run)


def _raw_name_shares(stored: dict[str, str | None], corpus: Any) -> dict[str, float]:
    """Shares of stored documents holding their person's full name / any name token."""
    full = token = empty = 0
    for d in corpus.documents:
        text = stored.get(d.id)
        if not text:
            empty += 1
            continue
        who = corpus.identities[d.identity]
        if who.name.lower() in text.lower():
            full += 1
        parts = [p for p in (*who.given_name.split(), *who.surname.split()) if len(p) > 1]
        if any(re.search(rf"(?<!\w){re.escape(p)}(?!\w)", text) for p in parts):
            token += 1
    n = len(corpus.documents)
    return {"raw_full_name": full / n, "raw_name_token": token / n, "no_text_stored": empty / n}


def _query_raw_share(ef: Any, corpus: Any) -> float:
    """Share of person queries whose raw name (full, case-insensitive) survives the query text stage."""
    qids = corpus.person_queries()
    out = ef.pipeline.sanitize_queries([corpus.queries[q] for q in qids])
    return sum(corpus.query_entity[q].lower() in t.lower() for q, t in zip(qids, out, strict=True)) / len(qids)


def _evaluate(store: Any, corpus: Any, k: int) -> dict[str, Any]:
    from private_vectors.eval.metrics import ndcg_at_k

    out: dict[str, Any] = {}
    groups = {"person": corpus.person_queries(),
              "city": [q for q, kind in corpus.query_kind.items() if kind == "city"]}
    for group, qids in groups.items():
        if not qids:
            continue
        queries = {q: corpus.queries[q] for q in qids}
        qrels = {q: corpus.qrels[q] for q in qids}
        run = _search(store, queries, k)
        out[f"{group}_ndcg@{k}"] = ndcg_at_k(run, qrels, k)
        out[f"{group}_top1"] = _top1(run, qrels)
        out[f"{group}_queries"] = len(qids)
    return out


def _stored_texts(collection: Any) -> dict[str, str | None]:
    got = collection.get(include=["documents"])
    return dict(zip(got["ids"], got["documents"] or [None] * len(got["ids"]), strict=True))


def run_setting(corpus: Any, sanitize: str | None, noise: bool, encoder: Any, k: int) -> dict[str, Any]:
    import chromadb

    from private_vectors.integrations.langchain import chroma_store

    ef = _embedding(sanitize, noise, encoder)
    client = chromadb.EphemeralClient()
    store = chroma_store(ef, collection_name=f"entity-{uuid.uuid4().hex[:10]}", client=client)
    t0 = time.perf_counter()
    store.add_texts(corpus.texts, ids=[d.id for d in corpus.documents])
    ingest = time.perf_counter() - t0
    t0 = time.perf_counter()
    row = {"store": "chroma_store", "sanitize": sanitize, "mechanism": "laplace ε=10" if noise else "none",
           **_evaluate(store, corpus, k)}
    row.update(_raw_name_shares(_stored_texts(store._collection), corpus))
    row["ingest_s"], row["query_s"] = ingest, time.perf_counter() - t0
    row["queries_with_raw_name"] = _query_raw_share(ef, corpus)
    client.delete_collection(store._collection.name)
    return row


def run_headline(corpus: Any, encoder: Any, k: int, plain: bool = True, sanitize: str | None = "surrogate",
                 noise: bool = True) -> dict[str, Any]:
    """"What do the records say about <person>?" for every person who owns a document, in the
    plain LangChain `Chroma(embedding_function=PrivateEmbedding(...))` (``plain``) or in chroma_store.
    ``sanitize=None`` / ``noise=False`` give the ceilings: the same queries without the text stage
    or without noise."""
    import chromadb
    from langchain_chroma import Chroma

    from private_vectors.eval.entity import QUERY_TEMPLATES
    from private_vectors.integrations.langchain import chroma_store

    ef = _embedding(sanitize, noise, encoder)
    client = chromadb.EphemeralClient()
    name = f"headline-{uuid.uuid4().hex[:10]}"
    store = Chroma(collection_name=name, embedding_function=ef, client=client) if plain else chroma_store(
        ef, collection_name=name, client=client)
    store.add_texts(corpus.texts, ids=[d.id for d in corpus.documents])
    people: dict[int, list[str]] = {}
    for d in corpus.documents:
        people.setdefault(d.identity, []).append(d.id)
    queries = {f"h-{i}": QUERY_TEMPLATES["about"].format(name=corpus.identities[i].name) for i in sorted(people)}
    qrels = {f"h-{i}": dict.fromkeys(people[i], 1) for i in sorted(people)}
    run = _search(store, queries, k)
    row = {"store": "langchain Chroma (plain)" if plain else "chroma_store", "sanitize": sanitize,
           "mechanism": "laplace ε=10" if noise else "none", "space": store._collection.configuration_json.get("hnsw", {}).get("space"),
           "about_queries": len(queries), "about_first_hit": _top1(run, qrels)}
    row.update(_raw_name_shares(_stored_texts(store._collection), corpus))
    client.delete_collection(store._collection.name)
    return row


def _pm(values: Sequence[float], digits: int = 3) -> str:
    """Mean, with ± the sample standard deviation over repeats when there is more than one."""
    mean = statistics.fmean(values)
    return f"{mean:.{digits}f}" if len(values) < 2 else f"{mean:.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def _groups(rows: Sequence[dict[str, Any]]) -> dict[tuple[Any, str], list[dict[str, Any]]]:
    out: dict[tuple[Any, str], list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["sanitize"], r["mechanism"]), []).append(r)
    return out


def _markdown(rows: Sequence[dict[str, Any]], headline: dict[str, Any] | None, meta: dict[str, Any], k: int) -> str:
    lines = [f"# Entity queries through chroma_store ({meta['date']})", "",
             f"Command: `{meta['command']}`", "",
             f"Corpus: {meta['corpus']}", "",
             f"Noise: keyed Laplace ε=10 under a fixed public benchmark key; {meta['repeats']} repeat(s), each with "
             "its own public scrypt salt (`repeat_salt(r)`), so each repeat is another reproducible noise draw. "
             "Noisy cells are mean ± standard deviation over repeats; rows without noise ran once.", "",
             f"Machine: {meta['machine']} (shared 2-core CPU; timings are noisy)", "",
             f"| sanitize | noise | person NDCG@{k} | person top-1 | city NDCG@{k} | city top-1 | "
             "stored docs with raw full name | with any raw name token | no text stored | "
             "person queries with raw name after text stage |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    groups = _groups(rows)
    for (sanitize, mech), rs in groups.items():
        def col(key: str, rs: list[dict[str, Any]] = rs) -> str:
            return _pm([r.get(key, float("nan")) for r in rs])
        first = rs[0]
        lines.append(
            f"| {sanitize} | {mech} | {col(f'person_ndcg@{k}')} | {col('person_top1')} | {col(f'city_ndcg@{k}')} | "
            f"{col('city_top1')} | {first['raw_full_name']:.3f} | {first['raw_name_token']:.3f} | "
            f"{first['no_text_stored']:.3f} | {first['queries_with_raw_name']:.3f} |")
    ratios = []
    for mech in ("laplace ε=10", "none"):
        base = {r["repeat"]: r for r in groups.get((None, mech), [])}
        for (sanitize, m), rs in groups.items():
            if m != mech or sanitize is None or not base:
                continue
            per = [r[f"person_ndcg@{k}"] / base[r["repeat"]][f"person_ndcg@{k}"] for r in rs if r["repeat"] in base]
            if per:
                ratios.append(f"- {sanitize} / None ({mech}): person NDCG@{k} {_pm(per)}× "
                              f"(per repeat: {', '.join(f'{x:.2f}' for x in per)})")
    if ratios:
        lines += ["", "Ratios to sanitize=None in the same configuration and repeat:", "", *ratios]
    if headline:
        plain, store = headline["plain"], headline["chroma_store"]
        lines += ["", f"Headline line (collection space {headline.get('space')!r}, LangChain's default), plain LangChain "
                  "`Chroma(embedding_function=PrivateEmbedding(concept=\"PII\", eps=10, key=..., sanitize=\"surrogate\"))`:",
                  "",
                  f"- \"What do the records say about <person>?\": first hit is one of that person's documents for "
                  f"{_pm([100 * x for x in plain], 1)}% of {headline['about_queries']} queries (one per person who owns a "
                  f"document; per repeat: {', '.join(f'{100 * x:.1f}' for x in plain)}); the same PrivateEmbedding "
                  f"through chroma_store (collection space = the embedding's): {_pm([100 * x for x in store], 1)}% "
                  f"(per repeat: {', '.join(f'{100 * x:.1f}' for x in store)})",
                  f"- ceilings, the same queries through chroma_store without noise: "
                  f"{100 * headline['ceilings']['None']:.1f}% unsanitized, "
                  f"{100 * headline['ceilings']['surrogate']:.1f}% with surrogates (what the encoder itself "
                  "achieves on this corpus)",
                  f"- stored documents with a raw full name: {headline['raw_full_name']:.3f} (plain LangChain Chroma "
                  "stores the texts it is given; use chroma_store to store the sanitized text)"]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--n-docs", type=int, default=1000)
    p.add_argument("--n-identities", type=int, default=300)
    p.add_argument("--n-person-queries", type=int, default=200)
    p.add_argument("--n-city-queries", type=int, default=50)
    p.add_argument("--sanitize", default="none,redact,surrogate", help="comma list of none|redact|surrogate")
    p.add_argument("--noise", default="laplace,none", help="comma list of laplace|none")
    p.add_argument("--repeats", type=int, default=1, help="noise draws (public salts repeat_salt(0..R-1))")
    p.add_argument("--no-headline", action="store_true")
    p.add_argument("--headline-only", action="store_true", help="skip the table rows")
    p.add_argument("--lowercase-share", type=float, default=0.0, help="share of queries written in lower case")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--key", default=None, help="benchmark key (default: a fixed public one)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if args.key:
        KEY[0] = args.key
    if args.repeats < 1:
        p.error(f"--repeats: expected an int >= 1, received {args.repeats}")

    from private_vectors.encoders import load_encoder
    from private_vectors.eval.cache import CachingEncoder
    from private_vectors.eval.entity import make_entity_corpus

    corpus = make_entity_corpus(Path(args.data) / "pii", n_identities=args.n_identities, n_docs=args.n_docs,
                                n_person_queries=args.n_person_queries, n_city_queries=args.n_city_queries,
                                lowercase_share=args.lowercase_share, seed=args.seed)
    encoder = CachingEncoder(load_encoder(None))
    rows: list[dict[str, Any]] = []
    noises = [] if args.headline_only else [s.strip() for s in args.noise.split(",") if s.strip()]
    for noise in noises:
        for repeat in range(args.repeats if noise == "laplace" else 1):
            SALT[0] = repeat_salt(repeat)
            for s in [s.strip() for s in args.sanitize.split(",") if s.strip()]:
                row = run_setting(corpus, None if s == "none" else s, noise == "laplace", encoder, args.k)
                row["repeat"] = repeat
                print(json.dumps(row), flush=True)
                rows.append(row)
    headline: dict[str, Any] | None = None
    if not args.no_headline:
        plain, store = [], []
        for repeat in range(args.repeats):
            SALT[0] = repeat_salt(repeat)
            a = run_headline(corpus, encoder, args.k)
            b = run_headline(corpus, encoder, args.k, plain=False)
            for r in (a, b):
                r["repeat"] = repeat
                print(json.dumps(r), flush=True)
                rows.append(r)
            plain.append(a["about_first_hit"])
            store.append(b["about_first_hit"])
            headline = headline or dict(a)
        SALT[0] = repeat_salt(0)
        ceilings = [run_headline(corpus, encoder, args.k, plain=False, sanitize=s, noise=False)
                    for s in (None, "surrogate")]
        for c in ceilings:
            print(json.dumps(c), flush=True)
            rows.append(c)
        assert headline is not None
        headline.update(plain=plain, chroma_store=store,
                        ceilings={str(c["sanitize"]): c["about_first_hit"] for c in ceilings})
    meta = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "command": "nice .venv/bin/python " + " ".join(["benchmarks/entity_query.py", *sys.argv[1:]]),
            "corpus": (f"{len(corpus.documents)} documents about {len(corpus.identity_counts())} people "
                       f"(Zipf s={corpus.config['zipf_s']}), {len(corpus.person_queries())} person queries, "
                       f"{len(corpus.queries) - len(corpus.person_queries())} city queries, "
                       f"{args.lowercase_share:.0%} of queries lower-cased, seed {args.seed}"),
            "machine": os.uname().machine, "key": "default" if args.key is None else "given with --key",
            "repeats": args.repeats}
    table_rows = [r for r in rows if f"person_ndcg@{args.k}" in r]
    md = _markdown(table_rows, headline, meta, args.k)
    print(md)
    if args.out:
        Path(args.out).write_text(md, encoding="utf-8")
        Path(args.out).with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
