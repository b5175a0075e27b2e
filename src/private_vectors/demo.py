"""``private-vectors demo``: the day-one job on the embedded defaults, in one screenful.

Stores a few built-in notes in a local persistent Chroma collection through
``PrivateEmbedding(concept="PII", eps=10)`` on the protected path
(:func:`private_vectors.chroma.add_documents`), shows each raw text beside what the store
keeps, runs one query against the protected index next to a clean baseline, and prints the
plain-language privacy report (:func:`private_vectors.report.privacy_report_text`; ``--json``
prints the full report for machines instead).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import textwrap
from typing import Any

SENTENCES = [
    "Maria Lopez booked a flight to Madrid for Monday.",
    "The patient John Smith reported a persistent cough and mild fever.",
    "Call Aisha Khan at 555-0199 about the unpaid invoice.",
    "Quarterly revenue of the Springfield branch grew by twelve percent.",
    "The hiking trail near Lake Tahoe closes after heavy snowfall.",
    "Emma Wilson, 42 Elm Street, asked for a refund of her train ticket.",
]
QUERY = "symptoms of a respiratory infection"
TOP_K = 3
WIDTH = 100


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the day-one example: a protected Chroma collection, a query, the privacy report")
    p.add_argument("--eps", type=float, default=10.0, help="privacy parameter (per 1/sqrt(n) of L2; default 10)")
    p.add_argument("--model", default=None, help="sentence-transformers name or path (default: packaged MiniLM)")
    p.add_argument("--concept", default="PII", help="text concept to replace (built-in name), or 'none'")
    p.add_argument("--mechanism", default=None, help="laplace (default), mahalanobis, purkayastha, gaussian, none")
    p.add_argument("--path", default=None, help="Chroma folder (default: a temporary folder, removed at the end)")
    p.add_argument("--json", action="store_true", help="print the full privacy report as JSON instead of the summary")
    p.set_defaults(func=run)


def _short(text: Any, width: int = WIDTH) -> str:
    """One line of at most ``width`` characters (an empty stored text shown as such)."""
    if not text:
        return "(no text stored)"
    return textwrap.shorten(str(text), width=width, placeholder=" …")


def _stored_texts(col: Any, ids: list[str]) -> list[Any]:
    got = col.get(ids=ids, include=["documents"])
    by_id = dict(zip(got["ids"], got["documents"] or [None] * len(got["ids"]), strict=True))
    return [by_id.get(i) for i in ids]


def _show_query(col: Any, ef: Any) -> None:
    import numpy as np

    res = col.query(query_texts=[QUERY], n_results=TOP_K, include=["documents"])
    hits = [int(i.split("-")[1]) for i in res["ids"][0]]
    docs = np.asarray(ef.encoder.encode(SENTENCES), dtype=np.float64)
    q = np.asarray(ef.encoder.encode([QUERY]), dtype=np.float64)[0]
    clean = [int(i) for i in np.argsort(-(docs @ q))[:TOP_K]]
    print(f"\nQuery {QUERY!r}: top {TOP_K} of the protected store [rank in an unprotected index; - below {TOP_K}]")
    for rank, (doc_id, text) in enumerate(zip(hits, res["documents"][0], strict=True), 1):
        print(f"  {rank}. [{clean.index(doc_id) + 1 if doc_id in clean else '-'}] {_short(text, WIDTH - 9)}")


def run(args: argparse.Namespace) -> int:
    import chromadb

    from .chroma import add_documents, create_collection
    from .embedding import PrivateEmbedding
    from .report import privacy_report_text

    concept = None if str(args.concept).lower() == "none" else args.concept
    ef = PrivateEmbedding(concept=concept, eps=args.eps, model=args.model, mechanism=args.mechanism)
    # without --path: a temporary folder, removed when the demo ends (or at interpreter exit)
    tmp = None if args.path else tempfile.TemporaryDirectory(prefix="private-vectors-demo-")
    path = args.path or tmp.name  # type: ignore[union-attr]
    client = chromadb.PersistentClient(path=path)
    col = create_collection(client, "demo", ef, get_or_create=True)
    ids = [f"doc-{i}" for i in range(len(SENTENCES))]
    # one pass: each text is sanitized once, embedded and stored as sanitized (never the raw text)
    add_documents(col, ids=ids, documents=SENTENCES, upsert=True)
    print(f"stored {col.count()} documents in {path} (concept {concept!r}, eps {ef.eps:g})")
    print("\nraw text -> what the store keeps")
    for raw, kept in zip(SENTENCES, _stored_texts(col, ids), strict=True):
        print(f"  {_short(raw, WIDTH - 2)}\n  -> {_short(kept, WIDTH - 5)}")
    _show_query(col, ef)
    if args.json:
        print(json.dumps(ef.privacy_report(SENTENCES), indent=2))
    else:
        print("\nPrivacy report (--json for the full report):")
        for line in privacy_report_text(ef, SENTENCES).splitlines():
            print(textwrap.fill(line, width=WIDTH, initial_indent="  ", subsequent_indent="    "))
    if tmp is not None:
        del col, client
        tmp.cleanup()
        print(f"removed the temporary folder {path} (pass --path to keep the collection)")
    return 0
