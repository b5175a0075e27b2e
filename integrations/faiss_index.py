"""FAISS: an HNSW index built from texts through PrivateEmbedding, saved and reloaded without pickle.

    .venv/bin/python integrations/faiss_index.py                 # default model, concept PII, eps 10
    .venv/bin/python integrations/faiss_index.py --model fake --concept none --kind flat
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _notes import NOTES, QUERIES


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--concept", default="PII", help="concept to hide, or 'none'")
    p.add_argument("--eps", type=float, default=10.0)
    p.add_argument("--kind", default="hnsw", choices=["flat", "ivf", "hnsw"])
    p.add_argument("--path", default=None, help="folder to save the index (default: a temporary one)")
    args = p.parse_args(argv)

    from private_vectors import PrivateEmbedding
    from private_vectors.integrations.faiss import PrivateFaissIndex, build_index, gpu_available

    concept = None if args.concept.lower() == "none" else args.concept
    ef = PrivateEmbedding(concept=concept, eps=args.eps, model=args.model)
    index = build_index(NOTES, ef, kind=args.kind, nlist=2 if args.kind == "ivf" else None)
    print(f"== {args.kind} index ({index.metric}, GPU: {gpu_available()}) with {len(index)} perturbed documents")

    folder = Path(args.path or tempfile.mkdtemp(prefix="pv-faiss-"))
    index.save(folder)
    print(f"== saved to {folder}: {sorted(f.name for f in folder.iterdir())}")
    loaded = PrivateFaissIndex.load(folder)  # PrivateEmbedding rebuilt from the JSON sidecar
    for q in QUERIES:
        print(f"\nQ: {q}")
        for doc_id, score, _ in loaded.search_texts(q, k=2):  # no text in the index folder by default
            print(f"   {doc_id}  {score:+.3f}  {NOTES[doc_id]}")

    print("\n== privacy report")
    print(json.dumps(ef.privacy_report(NOTES), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
