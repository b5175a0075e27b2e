"""Chroma, native API: a persistent collection whose stored vectors are perturbed.

    .venv/bin/python integrations/chroma_native.py                 # default model, concept PII, eps 10
    .venv/bin/python integrations/chroma_native.py --model fake --concept none

Prints the documents stored (with how far each stored vector is from its clean embedding),
the query results, the privacy report, and reopens the collection without passing an
embedding function to show that the same PrivateEmbedding is rebuilt from its config.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _notes import NOTES, QUERIES


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="encoder (default: packaged all-MiniLM-L6-v2; 'fake' for tests)")
    p.add_argument("--concept", default="PII", help="concept to hide, or 'none'")
    p.add_argument("--eps", type=float, default=10.0)
    p.add_argument("--path", default=None, help="Chroma folder (default: a temporary one)")
    args = p.parse_args(argv)

    import chromadb

    from private_vectors import PrivateEmbedding

    concept = None if args.concept.lower() == "none" else args.concept
    path = args.path or tempfile.mkdtemp(prefix="pv-chroma-")
    ef = PrivateEmbedding(concept=concept, eps=args.eps, model=args.model)
    client = chromadb.PersistentClient(path=path)
    col = client.get_or_create_collection("notes", embedding_function=ef)
    ids = [f"note-{i}" for i in range(len(NOTES))]
    # one pass: each note is sanitized once (ef's text stage), that text is embedded and stored;
    # col.upsert(documents=NOTES) would embed the same way but keep the raw NOTES as documents
    from private_vectors.integrations.chroma import add_documents

    add_documents(col, ids=ids, documents=NOTES, upsert=True)

    stored = np.asarray(col.get(ids=ids, include=["embeddings"])["embeddings"])
    clean = ef.encoder.encode(NOTES)
    print(f"== stored {col.count()} documents in {path} (collection space: {ef.space})")
    for i, note in enumerate(NOTES):
        print(f"  {ids[i]}  |stored - clean| = {np.linalg.norm(stored[i] - clean[i]):.2f}  {note}")

    print("\n== queries (clean queries, noise-aware transform: "
          f"{ef.query_transform.describe()['query_transform']})")
    res = col.query(query_texts=QUERIES, n_results=2)
    for q, hit_ids, docs in zip(QUERIES, res["ids"], res["documents"], strict=True):
        print(f"  {q!r}")
        for i, d in zip(hit_ids, docs, strict=True):
            print(f"     -> {i}: {d if d is not None else '(no text stored)'}")

    print("\n== privacy report")
    print(json.dumps(ef.privacy_report(NOTES), indent=2))

    reopened = chromadb.PersistentClient(path=path).get_collection("notes")  # no embedding function
    rebuilt = reopened.configuration["embedding_function"]
    print(f"\n== reopened without an embedding function: {rebuilt!r}")
    print(f"   same configuration as the writer: {rebuilt == ef}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
