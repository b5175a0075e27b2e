"""``private-vectors demo``: the day-one job on the embedded defaults.

Stores a few built-in notes in a local persistent Chroma collection through
``PrivateEmbedding(concept="PII", eps=10)``, runs queries against the perturbed index next to
a clean baseline, and prints the privacy report.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from typing import Any

SENTENCES = [
    "Maria Lopez booked a flight to Madrid for Monday.",
    "The patient John Smith reported a persistent cough and mild fever.",
    "Call Aisha Khan at 555-0199 about the unpaid invoice.",
    "Quarterly revenue of the Springfield branch grew by twelve percent.",
    "The hiking trail near Lake Tahoe closes after heavy snowfall.",
    "Emma Wilson, 42 Elm Street, asked for a refund of her train ticket.",
]
QUERIES = ["travel plans to Spain", "symptoms of a respiratory infection", "company earnings report"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the day-one example: private Chroma collection, queries, privacy report")
    p.add_argument("--eps", type=float, default=10.0, help="privacy parameter (per 1/sqrt(n) of L2)")
    p.add_argument("--model", default=None, help="sentence-transformers name or path (default: packaged MiniLM)")
    p.add_argument("--concept", default="PII", help="concept to hide (built-in name or folder), or 'none'")
    p.add_argument("--mechanism", default=None, help="mahalanobis (default with a concept), laplace, ...")
    p.add_argument("--path", default=None, help="Chroma folder (default: a temporary folder, removed at the end)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import chromadb
    import numpy as np

    from .embedding import PrivateEmbedding
    from .integrations.chroma import add_documents
    from .retrieval import strip_geometry

    concept = None if str(args.concept).lower() == "none" else args.concept
    ef = PrivateEmbedding(concept=concept, eps=args.eps, model=args.model, mechanism=args.mechanism)
    # without --path: a temporary folder, removed when the demo ends (or at interpreter exit)
    tmp = None if args.path else tempfile.TemporaryDirectory(prefix="private-vectors-demo-")
    path = args.path or tmp.name  # type: ignore[union-attr]
    client = chromadb.PersistentClient(path=path)
    col = client.get_or_create_collection("demo", embedding_function=ef)
    ids = [f"doc-{i}" for i in range(len(SENTENCES))]
    # one pass: each text is sanitized once, embedded and stored as sanitized (never the raw text)
    add_documents(col, ids=ids, documents=SENTENCES, upsert=True)
    print(f"stored {col.count()} documents in {path} (collection 'demo', space {ef.space}) through {ef!r}")

    got = col.get(ids=ids, include=["embeddings", "documents"])
    kept_texts: list[Any] = list(got["documents"] or [])
    kept_texts += [None] * (len(ids) - len(kept_texts))
    for raw, kept in zip(SENTENCES, kept_texts, strict=True):
        print(f"  raw:    {raw}\n  stored: {kept!r}")
    stored = strip_geometry(np.asarray(got["embeddings"], dtype=np.float64), ef.store_geometry)
    clean = np.asarray(ef.encoder.encode(SENTENCES), dtype=np.float64)
    print(f"mean distance stored vs clean vector of the raw text (store geometry {ef.store_geometry!r}): "
          f"{np.linalg.norm(stored - clean, axis=1).mean():.3f}")
    res = col.query(query_texts=QUERIES, n_results=1)
    top_docs = res["documents"] or [[""] for _ in QUERIES]
    q_clean = np.asarray(ef.encoder.encode(QUERIES), dtype=np.float64)
    for qi, query in enumerate(QUERIES):
        clean_top = SENTENCES[int(np.argmax(clean @ q_clean[qi]))]
        print(f"query: {query!r}\n  clean index top:   {clean_top}\n  private index top: {top_docs[qi][0]}")
    print(json.dumps(ef.privacy_report(SENTENCES), indent=2))
    if tmp is not None:
        del col, client
        tmp.cleanup()
        print(f"removed the temporary folder {path} (pass --path to keep the collection)")
    return 0
